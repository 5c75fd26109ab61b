import { type Bitmap, isOpaque, premultiply, unpremultiply } from "../bitmap.js";

/**
 * sharp's `blur(sigma)` is libvips' `gaussblur` with `min_ampl` 0.2: a Gaussian of standard deviation
 * `sigma` cut off where it falls below 0.2 of its peak (at about ±1.79 sigma), so its effective
 * standard deviation is about 0.83 sigma. This reproduces that kernel: exactly (separable
 * convolution) while it is short, and as three box passes of the same variance once it is long,
 * which costs O(1) per pixel whatever the sigma.
 */
const MIN_AMPLITUDE = 0.2;
/** Longest kernel radius convolved directly (13 taps); beyond it, three box passes. */
const DIRECT_RADIUS = 6;

export function gaussianKernel(sigma: number): Float64Array {
  const clamped = Math.max(0.3, sigma);
  const radius = Math.floor(clamped * Math.sqrt(-2 * Math.log(MIN_AMPLITUDE)) + 1e-9);
  const kernel = new Float64Array(2 * radius + 1);
  let sum = 0;
  for (let index = -radius; index <= radius; index += 1) {
    const value = Math.exp(-(index * index) / (2 * clamped * clamped));
    kernel[index + radius] = value;
    sum += value;
  }
  for (let index = 0; index < kernel.length; index += 1) kernel[index]! /= sum;
  return kernel;
}

/** Box widths (odd) of three passes whose combined variance is closest to `variance` (Kovesi). */
export function boxWidths(variance: number): number[] {
  const passes = 3;
  let lower = Math.floor(Math.sqrt((12 * variance) / passes + 1));
  if (lower % 2 === 0) lower -= 1;
  const upper = lower + 2;
  const count = Math.round(
    (12 * variance - passes * lower * lower - 4 * passes * lower - 3 * passes) / (-4 * lower - 4),
  );
  return Array.from({ length: passes }, (_, index) => (index < count ? lower : upper));
}

/** Gaussian blur of the whole bitmap (edges extended by copying, alpha premultiplied when present). */
export function blur(bitmap: Bitmap, sigma: number): Bitmap {
  const kernel = gaussianKernel(sigma);
  const radius = (kernel.length - 1) / 2;
  if (radius === 0) return bitmap;
  const opaque = isOpaque(bitmap);
  const source: Bitmap = { ...bitmap, data: Buffer.from(bitmap.data) };
  if (!opaque) premultiply(source);
  let result: Bitmap;
  if (radius <= DIRECT_RADIUS) {
    result = convolve(source, kernel);
  } else {
    let variance = 0;
    for (let index = 0; index < kernel.length; index += 1) variance += kernel[index]! * (index - radius) ** 2;
    const spare = Buffer.allocUnsafe(source.data.length);
    let buffers: [Buffer, Buffer] = [source.data, spare];
    for (const width of boxWidths(variance)) {
      if (width <= 1) continue;
      // An opaque image stays opaque: its alpha channel needs no horizontal pass.
      boxHorizontal(buffers[0], bitmap.width, bitmap.height, (width - 1) / 2, opaque ? 3 : 4);
      boxVertical(buffers[0], buffers[1], bitmap.width, bitmap.height, (width - 1) / 2);
      buffers = [buffers[1], buffers[0]];
    }
    result = { data: buffers[0], width: bitmap.width, height: bitmap.height };
  }
  if (!opaque) unpremultiply(result);
  return result;
}

/** Separable convolution with a symmetric kernel, edges clamped. */
function convolve(bitmap: Bitmap, kernel: Float64Array): Bitmap {
  const { width, height, data } = bitmap;
  const radius = (kernel.length - 1) / 2;
  const rowLength = width * 4;
  const row = new Float32Array(rowLength);
  // Horizontal pass, in place, one row at a time.
  for (let y = 0; y < height; y += 1) {
    const base = y * rowLength;
    row.fill(0);
    for (let tap = -radius; tap <= radius; tap += 1) {
      const weight = kernel[tap + radius]!;
      for (let x = 0; x < width; x += 1) {
        const sx = x + tap < 0 ? 0 : x + tap >= width ? width - 1 : x + tap;
        const from = base + sx * 4;
        const to = x * 4;
        row[to] = row[to]! + data[from]! * weight;
        row[to + 1] = row[to + 1]! + data[from + 1]! * weight;
        row[to + 2] = row[to + 2]! + data[from + 2]! * weight;
        row[to + 3] = row[to + 3]! + data[from + 3]! * weight;
      }
    }
    for (let index = 0; index < rowLength; index += 1) data[base + index] = row[index]! + 0.5;
  }
  // Vertical pass into a new buffer, accumulating whole rows (cache friendly).
  const out = Buffer.allocUnsafe(data.length);
  for (let y = 0; y < height; y += 1) {
    row.fill(0);
    for (let tap = -radius; tap <= radius; tap += 1) {
      const weight = kernel[tap + radius]!;
      const sy = y + tap < 0 ? 0 : y + tap >= height ? height - 1 : y + tap;
      const from = sy * rowLength;
      for (let index = 0; index < rowLength; index += 1)
        row[index] = row[index]! + data[from + index]! * weight;
    }
    const base = y * rowLength;
    for (let index = 0; index < rowLength; index += 1) out[base + index] = row[index]! + 0.5;
  }
  return { data: out, width, height };
}

/** One box pass of radius `radius` along each row, in place (running sums, edges clamped). */
function boxHorizontal(data: Buffer, width: number, height: number, radius: number, channels: number): void {
  const scale = 1 / (2 * radius + 1);
  const rowLength = width * 4;
  const row = new Uint8Array(rowLength);
  for (let y = 0; y < height; y += 1) {
    const base = y * rowLength;
    row.set(data.subarray(base, base + rowLength));
    for (let channel = 0; channel < channels; channel += 1) {
      const first = row[channel]!;
      const last = row[rowLength - 4 + channel]!;
      let sum = first * (radius + 1);
      for (let x = 1; x <= radius; x += 1) sum += row[Math.min(x, width - 1) * 4 + channel]!;
      for (let x = 0; x < width; x += 1) {
        data[base + x * 4 + channel] = sum * scale + 0.5;
        const add = x + radius + 1;
        const drop = x - radius;
        sum +=
          (add < width ? row[add * 4 + channel]! : last) - (drop >= 0 ? row[drop * 4 + channel]! : first);
      }
    }
  }
}

/** One box pass of radius `radius` down each column, from `source` into `target`, row by row. */
function boxVertical(source: Buffer, target: Buffer, width: number, height: number, radius: number): void {
  const scale = 1 / (2 * radius + 1);
  const rowLength = width * 4;
  const sums = new Float64Array(rowLength);
  const lastRow = (height - 1) * rowLength;
  for (let index = 0; index < rowLength; index += 1) {
    let sum = source[index]! * (radius + 1);
    for (let y = 1; y <= radius; y += 1) sum += source[Math.min(y, height - 1) * rowLength + index]!;
    sums[index] = sum;
  }
  for (let y = 0; y < height; y += 1) {
    const base = y * rowLength;
    const add = y + radius + 1 < height ? (y + radius + 1) * rowLength : lastRow;
    const drop = y - radius >= 0 ? (y - radius) * rowLength : 0;
    for (let index = 0; index < rowLength; index += 1) {
      const sum = sums[index]!;
      target[base + index] = sum * scale + 0.5;
      sums[index] = sum + source[add + index]! - source[drop + index]!;
    }
  }
}
