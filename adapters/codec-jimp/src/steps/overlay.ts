import type { OverlayLayer } from "@pixport/core/adapter-kit";
import type { Bitmap } from "../bitmap.js";

/** The part of `[offset, offset + length)` inside `[0, limit)`, in base coordinates. */
function span(offset: number, length: number, limit: number, tiled: boolean): [number, number] {
  return tiled ? [0, limit] : [Math.max(0, offset), Math.min(limit, offset + length)];
}

/**
 * Draws `tile` over `base` in place with the "over" operator, its top-left corner at (left, top),
 * at `opacity` (0..1), clipped to the base; `repeat` tiles it along x and/or y so that a tile
 * starts at left/top (negative offsets included).
 */
export function drawOver(
  base: Bitmap,
  tile: Bitmap,
  left: number,
  top: number,
  opacity: number,
  repeat: OverlayLayer["repeat"] = "no-repeat",
): void {
  const tilesX = repeat === "repeat" || repeat === "repeat-x";
  const tilesY = repeat === "repeat" || repeat === "repeat-y";
  const [x0, x1] = span(left, tile.width, base.width, tilesX);
  const [y0, y1] = span(top, tile.height, base.height, tilesY);
  if (x0 >= x1 || y0 >= y1 || opacity <= 0) return;
  const target = base.data;
  const source = tile.data;
  const targetWords = new Uint32Array(target.buffer, target.byteOffset, base.width * base.height);
  const sourceWords = new Uint32Array(source.buffer, source.byteOffset, tile.width * tile.height);
  const opaqueLayer = opacity >= 1;
  // Column of the tile for each base column (computed once, reused by every row).
  const columns = new Int32Array(x1 - x0);
  for (let x = x0; x < x1; x += 1) columns[x - x0] = (((x - left) % tile.width) + tile.width) % tile.width;
  for (let y = y0; y < y1; y += 1) {
    const v = (((y - top) % tile.height) + tile.height) % tile.height;
    const sourceRow = v * tile.width;
    const targetRow = y * base.width;
    for (let x = x0; x < x1; x += 1) {
      const s = sourceRow + columns[x - x0]!;
      const sourceAlpha = source[s * 4 + 3]!;
      if (sourceAlpha === 0) continue;
      const t = targetRow + x;
      if (sourceAlpha === 255 && opaqueLayer) {
        targetWords[t] = sourceWords[s]!;
        continue;
      }
      const alpha = (sourceAlpha / 255) * opacity;
      const to = t * 4;
      const from = s * 4;
      const baseAlpha = target[to + 3]! / 255;
      const outAlpha = alpha + baseAlpha * (1 - alpha);
      if (outAlpha <= 0) continue;
      const keep = (baseAlpha * (1 - alpha)) / outAlpha;
      const add = alpha / outAlpha;
      target[to] = source[from]! * add + target[to]! * keep + 0.5;
      target[to + 1] = source[from + 1]! * add + target[to + 1]! * keep + 0.5;
      target[to + 2] = source[from + 2]! * add + target[to + 2]! * keep + 0.5;
      target[to + 3] = outAlpha * 255 + 0.5;
    }
  }
}
