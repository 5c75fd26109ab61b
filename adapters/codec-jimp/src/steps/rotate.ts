import type { Rgba, Size } from "@pixport/core/adapter-kit";
import { rotatedSize } from "@pixport/core/adapter-kit";
import { type Bitmap, packed, quarterTurn } from "../bitmap.js";

/**
 * Rotates clockwise by `angle` degrees onto a canvas of exactly the core's `rotatedSize`. Multiples
 * of 90° are pixel-exact turns; other angles sample the source bilinearly (as libvips does for
 * sharp), treating everything outside the source as `background` and mixing in premultiplied alpha so
 * a transparent background never darkens the edges.
 */
export function rotate(bitmap: Bitmap, angle: number, background: Rgba): Bitmap {
  const normalised = ((angle % 360) + 360) % 360;
  if (normalised % 90 === 0) return quarterTurn(bitmap, normalised / 90);
  const frame = rotationFrame(bitmap, normalised);
  const data = Buffer.allocUnsafe(frame.width * frame.height * 4);
  sampleRotated(frame, premultipliedBackground(background), data);
  return { data, width: frame.width, height: frame.height };
}

/** The background premultiplied the way source samples are: colour x alpha, both on 0..255. */
interface PremultipliedBackground {
  readonly r: number;
  readonly g: number;
  readonly b: number;
  readonly a: number;
  /** The background as one RGBA word, for pixels outside the source. */
  readonly fill: number;
}

function premultipliedBackground(background: Rgba): PremultipliedBackground {
  const a = Math.min(1, Math.max(0, background.alpha)) * 255;
  return {
    r: Math.round(background.r) * a,
    g: Math.round(background.g) * a,
    b: Math.round(background.b) * a,
    a,
    fill: packed(background),
  };
}

/** Where each output pixel falls on the turned source. */
interface RotationFrame {
  readonly source: Buffer;
  readonly sourceWidth: number;
  readonly sourceHeight: number;
  /** The output size, the core's `rotatedSize`. */
  readonly width: number;
  readonly height: number;
  readonly cos: number;
  readonly sin: number;
  /** The canvas's top-left corner in turned coordinates. */
  readonly originX: number;
  readonly originY: number;
  readonly canvasWidth: number;
  readonly canvasHeight: number;
  /** Output pixel (x, y) is canvas pixel (x + shiftX, y + shiftY). */
  readonly shiftX: number;
  readonly shiftY: number;
}

function rotationFrame(bitmap: Bitmap, normalised: number): RotationFrame {
  const target: Size = rotatedSize(bitmap, normalised);
  const { width: sourceWidth, height: sourceHeight, data: source } = bitmap;
  const { width, height } = target;
  const radians = (normalised * Math.PI) / 180;
  const cos = Math.cos(radians);
  const sin = Math.sin(radians);
  // Canvas geometry as libvips (sharp's rotate) builds it, so both codecs put every pixel in the same
  // place: the input is turned about its origin, pixel indices taken as points, and libvips' canvas
  // spans the rounded bounding box of the turned corners; the sharp codec then pads or trims that
  // canvas, centred, to the core's rotatedSize. Doing the same here keeps the two within rounding.
  const corners = [
    [0, 0],
    [sourceWidth, 0],
    [0, sourceHeight],
    [sourceWidth, sourceHeight],
  ].map(([x, y]) => [x! * cos - y! * sin, x! * sin + y! * cos] as const);
  const originX = Math.round(Math.min(...corners.map((corner) => corner[0])));
  const originY = Math.round(Math.min(...corners.map((corner) => corner[1])));
  const canvasWidth = Math.round(Math.max(...corners.map((corner) => corner[0]))) - originX;
  const canvasHeight = Math.round(Math.max(...corners.map((corner) => corner[1]))) - originY;
  const shiftX =
    canvasWidth > width ? Math.floor((canvasWidth - width) / 2) : -Math.floor((width - canvasWidth) / 2);
  const shiftY =
    canvasHeight > height
      ? Math.floor((canvasHeight - height) / 2)
      : -Math.floor((height - canvasHeight) / 2);
  return {
    source,
    sourceWidth,
    sourceHeight,
    width,
    height,
    cos,
    sin,
    originX,
    originY,
    canvasWidth,
    canvasHeight,
    shiftX,
    shiftY,
  };
}

/** Fills `data` with every output pixel of the frame. */
function sampleRotated(frame: RotationFrame, background: PremultipliedBackground, data: Buffer): void {
  const { width, height, sourceWidth, sourceHeight, cos, sin, canvasWidth, canvasHeight } = frame;
  const fillWords = new Uint32Array(data.buffer, data.byteOffset, width * height);
  for (let y = 0; y < height; y += 1) {
    const canvasY = y + frame.shiftY;
    const oy = canvasY + frame.originY;
    for (let x = 0; x < width; x += 1) {
      const canvasX = x + frame.shiftX;
      const out = (y * width + x) * 4;
      const ox = canvasX + frame.originX;
      // Inverse rotation (counter-clockwise) of the canvas point, in source pixel indices.
      const sx = ox * cos + oy * sin;
      const sy = -ox * sin + oy * cos;
      if (
        canvasX < 0 ||
        canvasY < 0 ||
        canvasX >= canvasWidth ||
        canvasY >= canvasHeight ||
        sx <= -1 ||
        sy <= -1 ||
        sx >= sourceWidth ||
        sy >= sourceHeight
      ) {
        fillWords[out >> 2] = background.fill;
      } else if (sx >= 0 && sy >= 0 && sx < sourceWidth - 1 && sy < sourceHeight - 1) {
        sampleInside(frame.source, sourceWidth, sx, sy, data, out);
      } else {
        sampleBorder(frame, background, sx, sy, data, out);
      }
    }
  }
}

/** Fully inside: plain bilinear on premultiplied values. */
function sampleInside(
  source: Buffer,
  sourceWidth: number,
  sx: number,
  sy: number,
  data: Buffer,
  out: number,
) {
  const x0 = Math.floor(sx);
  const y0 = Math.floor(sy);
  const fx = sx - x0;
  const fy = sy - y0;
  const p00 = (y0 * sourceWidth + x0) * 4;
  const p10 = p00 + 4;
  const p01 = p00 + sourceWidth * 4;
  const p11 = p01 + 4;
  const w00 = (1 - fx) * (1 - fy);
  const w10 = fx * (1 - fy);
  const w01 = (1 - fx) * fy;
  const w11 = fx * fy;
  const a00 = source[p00 + 3]! * w00;
  const a10 = source[p10 + 3]! * w10;
  const a01 = source[p01 + 3]! * w01;
  const a11 = source[p11 + 3]! * w11;
  const alpha = a00 + a10 + a01 + a11;
  if (alpha <= 0) {
    data[out] = 0;
    data[out + 1] = 0;
    data[out + 2] = 0;
    data[out + 3] = 0;
    return;
  }
  data[out] =
    (source[p00]! * a00 + source[p10]! * a10 + source[p01]! * a01 + source[p11]! * a11) / alpha + 0.5;
  data[out + 1] =
    (source[p00 + 1]! * a00 + source[p10 + 1]! * a10 + source[p01 + 1]! * a01 + source[p11 + 1]! * a11) /
      alpha +
    0.5;
  data[out + 2] =
    (source[p00 + 2]! * a00 + source[p10 + 2]! * a10 + source[p01 + 2]! * a01 + source[p11 + 2]! * a11) /
      alpha +
    0.5;
  data[out + 3] = alpha + 0.5;
}

/** On the border: neighbours outside the source are the background. */
function sampleBorder(
  frame: RotationFrame,
  background: PremultipliedBackground,
  sx: number,
  sy: number,
  data: Buffer,
  out: number,
) {
  const { source, sourceWidth } = frame;
  const maxX = sourceWidth - 1;
  const maxY = frame.sourceHeight - 1;
  const x0 = Math.floor(sx);
  const y0 = Math.floor(sy);
  const fx = sx - x0;
  const fy = sy - y0;
  let r = 0;
  let g = 0;
  let b = 0;
  let a = 0;
  for (let corner = 0; corner < 4; corner += 1) {
    const cx = x0 + (corner & 1);
    const cy = y0 + (corner >> 1);
    const weight = ((corner & 1) === 1 ? fx : 1 - fx) * (corner >> 1 === 1 ? fy : 1 - fy);
    if (weight === 0) continue;
    if (cx < 0 || cy < 0 || cx > maxX || cy > maxY) {
      r += background.r * weight;
      g += background.g * weight;
      b += background.b * weight;
      a += background.a * weight;
    } else {
      const p = (cy * sourceWidth + cx) * 4;
      const pa = source[p + 3]! * weight;
      r += source[p]! * pa;
      g += source[p + 1]! * pa;
      b += source[p + 2]! * pa;
      a += pa;
    }
  }
  if (a <= 0) {
    data[out] = 0;
    data[out + 1] = 0;
    data[out + 2] = 0;
    data[out + 3] = 0;
  } else {
    data[out] = r / a + 0.5;
    data[out + 1] = g / a + 0.5;
    data[out + 2] = b / a + 0.5;
    data[out + 3] = a + 0.5;
  }
}
