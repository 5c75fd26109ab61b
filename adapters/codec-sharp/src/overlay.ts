import { sniffImageFormat } from "@pixport/core";
import type { OverlayLayer, Size } from "@pixport/core/adapter-kit";
import { FORMAT_LIST, invalidImage } from "@pixport/core/adapter-kit";
import type { OverlayOptions, Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { asBuffer } from "./errors.js";

const CHANNELS = 4;

/** A half-open range `[start, end)` of pixel indices. */
interface Span {
  start: number;
  end: number;
}

interface RgbaPixels {
  data: Buffer;
  width: number;
  height: number;
}

/**
 * Turns overlay layers into sharp composite entries for a base of `base` size. Every entry lies
 * inside the base (sharp refuses overlays larger than the base), so offsets that are negative or
 * overflow are clipped here; layers with nothing visible are dropped. Tiling builds one tile (or one
 * strip) of at most the base size, never one entry per tile.
 */
export async function compositeEntries(
  layers: readonly OverlayLayer[],
  base: Size,
  decodeOptions: SharpOptions,
): Promise<OverlayOptions[]> {
  const entries: OverlayOptions[] = [];
  for (const [index, layer] of layers.entries()) {
    const entry = await compositeEntry(layer, index, base, decodeOptions);
    if (entry !== null) entries.push(entry);
  }
  return entries;
}

async function compositeEntry(
  layer: OverlayLayer,
  index: number,
  base: Size,
  decodeOptions: SharpOptions,
): Promise<OverlayOptions | null> {
  const width = Math.max(1, Math.round(layer.width));
  const height = Math.max(1, Math.round(layer.height));
  const left = Math.round(layer.left);
  const top = Math.round(layer.top);
  const opacity = Number.isFinite(layer.opacity) ? Math.min(1, Math.max(0, layer.opacity)) : 1;
  const tilesX = layer.repeat === "repeat" || layer.repeat === "repeat-x";
  const tilesY = layer.repeat === "repeat" || layer.repeat === "repeat-y";
  // Only the part of the overlay that can land on the base is decoded and resized. Along an axis
  // that is not tiled that is the visible span; along a tiled axis it is the whole tile, unless the
  // tile is longer than the base: then only the base-long window of the tiling is needed (one or two
  // pieces of the tile, when the window wraps), so a 10000 px tile on a 64 px base costs 64 px.
  const axisX = tilesX ? tiledAxis(left, width, base.width) : plainAxis(left, width, base.width);
  const axisY = tilesY ? tiledAxis(top, height, base.height) : plainAxis(top, height, base.height);
  if (opacity === 0 || axisX.pieces.length === 0 || axisY.pieces.length === 0) return null;

  const input = asBuffer(layer.input, `layers[${index}].input`);
  if (sniffImageFormat(input) === null) {
    throw invalidImage(`Overlay ${index} is not a ${FORMAT_LIST} image.`);
  }
  const resized = () => sharp(input, decodeOptions).resize({ width, height, fit: "fill" });
  const tile = await decodeTile(resized, { width, height }, axisX, axisY);
  if (opacity < 1) {
    for (let offset = 3; offset < tile.data.length; offset += CHANNELS) {
      tile.data[offset] = Math.round(tile.data[offset]! * opacity);
    }
  }
  // Along a windowed axis the tile already starts where the base does.
  const startX = axisX.windowed ? 0 : mod(-left, width);
  const startY = axisY.windowed ? 0 : mod(-top, height);
  return placeTile(layer.repeat, tile, { startX, startY, left, top }, base);
}

/** The decoded part of the resized overlay: its pieces along both axes, laid side by side. */
async function decodeTile(resized: () => Sharp, full: Size, axisX: Axis, axisY: Axis): Promise<RgbaPixels> {
  if (axisX.pieces.length === 1 && axisY.pieces.length === 1) {
    return region(resized(), axisX.pieces[0]!, axisY.pieces[0]!, full);
  }
  // A window that wraps: its pieces are extracted separately and laid side by side.
  const data = Buffer.alloc(axisX.length * axisY.length * CHANNELS);
  for (const pieceY of axisY.pieces) {
    for (const pieceX of axisX.pieces) {
      const part = await region(resized(), pieceX, pieceY, full);
      for (let row = 0; row < part.height; row += 1) {
        part.data.copy(
          data,
          ((pieceY.at + row) * axisX.length + pieceX.at) * CHANNELS,
          row * part.width * CHANNELS,
          (row + 1) * part.width * CHANNELS,
        );
      }
    }
  }
  return { data, width: axisX.length, height: axisY.length };
}

/** Where the tile goes: the tiling phase (`start*`) and the layer's rounded offset. */
interface Placement {
  startX: number;
  startY: number;
  left: number;
  top: number;
}

/** The composite entry of a decoded tile, replicated as the layer's `repeat` asks. */
function placeTile(
  repeat: OverlayLayer["repeat"],
  tile: RgbaPixels,
  { startX, startY, left, top }: Placement,
  base: Size,
): OverlayOptions {
  switch (repeat) {
    case "repeat": {
      // Shift the tile so that a tile starting at (0, 0) lines up with one starting at left/top,
      // then let libvips replicate it lazily over the whole base.
      const shifted = periodic(
        tile,
        startX,
        startY,
        Math.min(tile.width, base.width),
        Math.min(tile.height, base.height),
      );
      return { ...rawInput(shifted), tile: true, gravity: "northwest" };
    }
    case "repeat-x": {
      const strip = periodic(tile, startX, 0, base.width, tile.height);
      return { ...rawInput(strip), left: 0, top: Math.max(0, top) };
    }
    case "repeat-y": {
      const strip = periodic(tile, 0, startY, tile.width, base.height);
      return { ...rawInput(strip), left: Math.max(0, left), top: 0 };
    }
    default:
      return { ...rawInput(tile), left: Math.max(0, left), top: Math.max(0, top) };
  }
}

/** A piece `[start, end)` of the overlay, placed at `at` in the decoded tile. */
interface Piece extends Span {
  at: number;
}

interface Axis {
  pieces: Piece[];
  /** Length of the decoded tile along the axis. */
  length: number;
  /** Whether the tile is a base-long window of the tiling (already aligned with the base). */
  windowed: boolean;
}

/** An axis that is not tiled: the visible span of the overlay. */
function plainAxis(offset: number, length: number, limit: number): Axis {
  const span = visibleSpan(offset, length, limit);
  if (span.end <= span.start) return { pieces: [], length: 0, windowed: false };
  return { pieces: [{ ...span, at: 0 }], length: span.end - span.start, windowed: false };
}

/** A tiled axis: the whole tile, or the base-long window of the tiling when the tile is longer. */
function tiledAxis(offset: number, length: number, limit: number): Axis {
  if (length <= limit) return { pieces: [{ start: 0, end: length, at: 0 }], length, windowed: false };
  const start = mod(-offset, length);
  const first = Math.min(length, start + limit);
  const pieces: Piece[] = [{ start, end: first, at: 0 }];
  if (first - start < limit) pieces.push({ start: 0, end: limit - (first - start), at: first - start });
  return { pieces, length: limit, windowed: true };
}

/** The RGBA pixels of one rectangle of the (resized) overlay. */
async function region(image: Sharp, columns: Span, rows: Span, full: Size): Promise<RgbaPixels> {
  const whole =
    columns.start === 0 && columns.end === full.width && rows.start === 0 && rows.end === full.height;
  const cropped = whole
    ? image
    : image.extract({
        left: columns.start,
        top: rows.start,
        width: columns.end - columns.start,
        height: rows.end - rows.start,
      });
  const { data, info } = await cropped
    .toColourspace("srgb")
    .ensureAlpha()
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== CHANNELS)
    throw new Error(`Expected 4 channels for an overlay, received ${info.channels}`);
  return { data, width: info.width, height: info.height };
}

function rawInput(pixels: RgbaPixels): OverlayOptions {
  return { input: pixels.data, raw: { width: pixels.width, height: pixels.height, channels: CHANNELS } };
}

/** The part of `[offset, offset + length)` inside `[0, limit)`, in overlay coordinates. */
function visibleSpan(offset: number, length: number, limit: number): Span {
  return { start: Math.max(0, -offset), end: Math.min(length, limit - offset) };
}

function mod(value: number, divisor: number): number {
  return ((value % divisor) + divisor) % divisor;
}

/**
 * An `width` x `height` image whose pixel (x, y) is the tile's pixel
 * ((x + startX) mod tile.width, (y + startY) mod tile.height). Each row is built from one period and
 * then doubled with `copyWithin`, so tiny tiles cost O(log n) copies per row.
 */
function periodic(
  tile: RgbaPixels,
  startX: number,
  startY: number,
  width: number,
  height: number,
): RgbaPixels {
  if (startX === 0 && startY === 0 && width === tile.width && height === tile.height) return tile;
  const rowBytes = width * CHANNELS;
  const tileRowBytes = tile.width * CHANNELS;
  const out = Buffer.allocUnsafe(rowBytes * height);
  for (let y = 0; y < height; y += 1) {
    const target = y * rowBytes;
    const source = ((y + startY) % tile.height) * tileRowBytes;
    const head = Math.min(tile.width - startX, width);
    tile.data.copy(out, target, source + startX * CHANNELS, source + (startX + head) * CHANNELS);
    let filled = head;
    if (filled < width) {
      const wrap = Math.min(startX, width - filled);
      tile.data.copy(out, target + filled * CHANNELS, source, source + wrap * CHANNELS);
      filled += wrap;
    }
    // `filled` is now one whole period (or the full row), so doubling keeps the pattern.
    while (filled < width) {
      const count = Math.min(filled, width - filled);
      out.copyWithin(target + filled * CHANNELS, target, target + count * CHANNELS);
      filled += count;
    }
  }
  return { data: out, width, height };
}
