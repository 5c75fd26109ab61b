import type { PixelData } from "./auto-quality.js";

/*
 * Mean SSIM for the automatic-quality search: the value ssim.js (MIT) computes with
 * `{ ssim: "bezkrovny" }` and its defaults (integer luma, the reference implementation's box
 * downsampling to about 256 px on the shorter side, 11 px windows side by side), computed over
 * typed arrays with the reference's side prepared once per search. ssim.js builds a generic matrix
 * for every filter, pad and window; its downsampling alone took about 70 % of a JPEG search, where
 * this takes about a hundredth of it (packages/core/test/ssim.test.ts compares both).
 */

/** The shorter side ssim.js reduces an image towards before measuring it. */
const SCALE_SIDE = 256;
const WINDOW = 11;
const C1 = (0.01 * 255) ** 2;
const C2 = (0.03 * 255) ** 2;

/**
 * The factor ssim.js downsamples an image of `size` by: `round(shorter side / 256)`, at least 1.
 * A probe cut from an output is measured at its output's factor (a probe is smaller, and measured
 * at a finer scale its SSIM would read lower).
 */
export function ssimScale(size: { width: number; height: number }): number {
  return Math.max(1, Math.round(Math.min(size.width, size.height) / SCALE_SIDE));
}

/** One channel of luma, row by row. */
interface Plane {
  data: Float64Array;
  width: number;
  height: number;
}

/** Writes the luma of row `y` of `pixels` into `row` (ITU-R BT.601 in integers, as ssim.js's default; grey as it is). */
function lumaRow(pixels: PixelData, y: number, row: Int32Array): void {
  const { data, width, channels } = pixels;
  let at = y * width * channels;
  if (channels < 3) {
    for (let x = 0; x < width; x += 1, at += channels) row[x] = data[at]!;
  } else {
    for (let x = 0; x < width; x += 1, at += channels) {
      row[x] = (77 * data[at]! + 150 * data[at + 1]! + 29 * data[at + 2]! + 128) >> 8;
    }
  }
}

/** Index `index` of a side of `size` mirrored at the edges (MATLAB's "symmetric" padding). */
function mirrored(index: number, size: number): number {
  if (index < 0) return -index - 1;
  return index >= size ? 2 * size - index - 1 : index;
}

/**
 * The luma of `pixels` averaged over `factor` x `factor` boxes at every `factor`-th pixel from the
 * first, the box starting `floor(factor / 2)` before it, mirrored at the edges: MATLAB's
 * `imfilter(..., "symmetric", "same")` then a stride, as ssim.js downsamples. One source row at a
 * time, so no full-size plane is made.
 */
function lumaPlane(pixels: PixelData, factor: number): Plane {
  const { width, height } = pixels;
  const row = new Int32Array(width);
  if (factor <= 1) {
    const data = new Float64Array(width * height);
    for (let y = 0; y < height; y += 1) {
      lumaRow(pixels, y, row);
      data.set(row, y * width);
    }
    return { data, width, height };
  }
  const shift = Math.floor(factor / 2);
  const outWidth = Math.ceil(width / factor);
  const outHeight = Math.ceil(height / factor);
  const data = new Float64Array(outWidth * outHeight);
  const area = factor * factor;
  for (let out = 0; out < outHeight; out += 1) {
    const line = out * outWidth;
    for (let y = out * factor - shift; y < out * factor - shift + factor; y += 1) {
      lumaRow(pixels, mirrored(y, height), row);
      for (let column = 0; column < outWidth; column += 1) {
        const first = column * factor - shift;
        let sum = 0;
        if (first >= 0 && first + factor <= width) {
          for (let x = first; x < first + factor; x += 1) sum += row[x]!;
        } else {
          for (let x = first; x < first + factor; x += 1) sum += row[mirrored(x, width)]!;
        }
        data[line + column]! += sum;
      }
    }
    for (let column = 0; column < outWidth; column += 1) data[line + column]! /= area;
  }
  return { data, width: outWidth, height: outHeight };
}

/** The reference side of a comparison, prepared once: its plane and each window's mean and variance. */
export interface SsimReference {
  readonly plane: Plane;
  readonly scale: number;
  readonly means: Float64Array;
  readonly variances: Float64Array;
}

/** Calls `each(window, x, y, columns, rows)` for every window of a plane, left to right, top to bottom. */
function forEachWindow(
  plane: Plane,
  each: (window: number, x: number, y: number, columns: number, rows: number) => void,
): void {
  let window = 0;
  for (let y = 0; y < plane.height; y += WINDOW) {
    for (let x = 0; x < plane.width; x += WINDOW) {
      each(window, x, y, Math.min(WINDOW, plane.width - x), Math.min(WINDOW, plane.height - y));
      window += 1;
    }
  }
}

const windowCount = (plane: Plane) => Math.ceil(plane.width / WINDOW) * Math.ceil(plane.height / WINDOW);

/** `reference` (the pixels as shown) prepared for {@link meanSsim}, measured at `scale` ({@link ssimScale}). */
export function ssimReference(reference: PixelData, scale = ssimScale(reference)): SsimReference {
  const plane = lumaPlane(reference, scale);
  const means = new Float64Array(windowCount(plane));
  const variances = new Float64Array(means.length);
  forEachWindow(plane, (window, x, y, columns, rows) => {
    let sum = 0;
    let squares = 0;
    for (let row = y; row < y + rows; row += 1) {
      for (let at = row * plane.width + x, end = at + columns; at < end; at += 1) {
        const value = plane.data[at]!;
        sum += value;
        squares += value * value;
      }
    }
    const count = columns * rows;
    means[window] = sum / count;
    variances[window] = squares / count - (sum / count) ** 2;
  });
  return { plane, scale, means, variances };
}

/** The mean SSIM of `candidate` (the same size as the reference's pixels) against `reference`, 0..1. */
export function meanSsim(reference: SsimReference, candidate: PixelData): number {
  const plane = lumaPlane(candidate, reference.scale);
  const { plane: base, means, variances } = reference;
  if (plane.width !== base.width || plane.height !== base.height) {
    throw new RangeError(`SSIM of ${plane.width}x${plane.height} against ${base.width}x${base.height}`);
  }
  let total = 0;
  forEachWindow(plane, (window, x, y, columns, rows) => {
    let sum = 0;
    let squares = 0;
    let products = 0;
    for (let row = y; row < y + rows; row += 1) {
      for (let at = row * plane.width + x, end = at + columns; at < end; at += 1) {
        const value = plane.data[at]!;
        sum += value;
        squares += value * value;
        products += value * base.data[at]!;
      }
    }
    const count = columns * rows;
    const mean = sum / count;
    const baseMean = means[window]!;
    const covariance = products / count - mean * baseMean;
    const variance = squares / count - mean * mean;
    total +=
      ((2 * baseMean * mean + C1) * (2 * covariance + C2)) /
      ((baseMean * baseMean + mean * mean + C1) * (variances[window]! + variance + C2));
  });
  return total / windowCount(plane);
}
