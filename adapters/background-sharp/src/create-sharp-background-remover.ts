import {
  type BackgroundRemovalOptions,
  type BackgroundRemovalRequest,
  type BackgroundRemover,
  parseOptions,
} from "@pixport/core";
import sharp from "sharp";
import { z } from "zod";
import { cutoutPng, openRequestImage } from "./cutout.js";

/** Options of {@link createSharpBackgroundRemover}; every field has a default. */
export const sharpBackgroundRemoverOptionsSchema = z
  .object({
    /**
     * Longest side (px) of the working copy the mask is computed on; the mask is scaled back up to
     * the full size. Bounds the work per image. @default 768
     */
    workingSide: z.number().int().min(16).max(8192).default(768),
    /**
     * Smallest colour distance (Euclidean RGB, 0..441) from the estimated background that counts
     * as subject. The threshold grows with the background's noise (see README). @default 22
     */
    minThreshold: z.number().min(0).max(441).default(22),
    /** Largest colour-distance threshold, however noisy the background. @default 70 */
    maxThreshold: z.number().min(0).max(441).default(70),
    /** Width in full-size px of the feathered alpha edge (Gaussian sigma). @default 1 */
    featherSigma: z.number().min(0).max(50).default(1),
    /** Decoder pixel limit (the deployment's `maxInputPixels`). @default 100_000_000 */
    maxInputPixels: z.number().int().positive().default(100_000_000),
  })
  .strict()
  .refine((options) => options.minThreshold <= options.maxThreshold, {
    message: "must not be above maxThreshold",
    path: ["minThreshold"],
  });

/** Options of {@link createSharpBackgroundRemover}; see {@link sharpBackgroundRemoverOptionsSchema}. */
export type SharpBackgroundRemoverOptions = z.input<typeof sharpBackgroundRemoverOptionsSchema>;

export interface MaskResult {
  /** 1 = subject, 0 = background; `width * height` entries. */
  mask: Uint8Array;
  width: number;
  height: number;
  /** The colour-distance threshold used. */
  threshold: number;
}

/**
 * The embedded, offline {@link BackgroundRemover}: classical segmentation on sharp, no model.
 *
 * 1. A working copy (at most `workingSide` px, lightly blurred against noise) is decoded to RGB.
 * 2. The background is modelled from the image border: a quadratic colour surface over (x, y) is
 *    fitted to the border pixels by robust (outlier-rejecting) least squares, so plain, linear
 *    and radial gradient backgrounds are represented and a subject touching the border is ignored.
 * 3. The colour-distance threshold adapts to the border's noise (`minThreshold`..`maxThreshold`).
 * 4. Background = the pixels within the threshold of the model that are connected to the border
 *    (flood fill from the border, 4-connected), plus enclosed regions (a ring's hole, a handle)
 *    whose pixels all lie within the threshold and on average within half of it; everything
 *    else is subject.
 * 5. Morphology: an opening removes specks, a closing fills cracks, subject fragments smaller than
 *    0.1 % of the image are dropped.
 * 6. The mask is scaled to full size, feathered (Gaussian), combined with any existing alpha and
 *    joined to the original pixels as a PNG.
 *
 * Every stage is linear in the pixel count, so it never hangs. It fails on busy backgrounds
 * (scenes, patterns, strong textures), on subjects with the background's colour, and it
 * makes an enclosed part of the subject transparent when it matches the background closely (a
 * white mug's inside on a white backdrop, with only a thin outline between them).
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({ ...deps, backgroundRemover: createSharpBackgroundRemover() });
 * ```
 */
export function createSharpBackgroundRemover(options: SharpBackgroundRemoverOptions = {}): BackgroundRemover {
  const settings = parseOptions(sharpBackgroundRemoverOptionsSchema, options, "createSharpBackgroundRemover");
  return {
    name: "sharp-classical",
    async remove(request: BackgroundRemovalRequest, callOptions: BackgroundRemovalOptions = {}) {
      const signal = callOptions.signal;
      const image = await openRequestImage(request, settings.maxInputPixels);
      const { source, width, height } = image;
      signal?.throwIfAborted();
      const scale = Math.min(1, settings.workingSide / Math.max(width, height));
      const workWidth = Math.max(1, Math.round(width * scale));
      const workHeight = Math.max(1, Math.round(height * scale));
      const work = await source()
        .flatten({ background: "#ffffff" })
        .resize(workWidth, workHeight, { fit: "fill" })
        .blur(workWidth >= 32 && workHeight >= 32 ? 0.8 : false)
        .removeAlpha()
        .toColourspace("srgb")
        .raw()
        .toBuffer();
      signal?.throwIfAborted();
      const { mask } = computeMask(
        new Uint8Array(work.buffer, work.byteOffset, work.byteLength),
        workWidth,
        workHeight,
        settings,
      );
      const small = new Uint8Array(mask.length);
      for (let index = 0; index < mask.length; index += 1) small[index] = mask[index] === 1 ? 255 : 0;
      const sigma = Math.max(0.3, settings.featherSigma);
      const alpha = await sharp(small, { raw: { width: workWidth, height: workHeight, channels: 1 } })
        .resize(width, height, { fit: "fill", kernel: "linear" })
        .blur(sigma)
        .extractChannel(0)
        .raw()
        .toBuffer();
      signal?.throwIfAborted();
      return cutoutPng(image, alpha);
    },
  };
}

/**
 * Segments an RGB raw image (3 bytes per pixel): 1 = subject, 0 = background connected to the
 * border. Pure and linear in the pixel count.
 */
export function computeMask(
  rgb: Uint8Array,
  width: number,
  height: number,
  settings: { minThreshold: number; maxThreshold: number } = { minThreshold: 22, maxThreshold: 70 },
): MaskResult {
  const pixels = width * height;
  const model = fitBorderModel(rgb, width, height);
  const threshold = Math.min(settings.maxThreshold, Math.max(settings.minThreshold, 4 * model.sigma + 8));
  const nx = (x: number) => (width === 1 ? 0 : (2 * x) / (width - 1) - 1);
  const ny = (y: number) => (height === 1 ? 0 : (2 * y) / (height - 1) - 1);
  // Pass 1: the quadratic surface fitted to the border.
  const expected = new Float32Array(pixels * 3);
  for (let y = 0; y < height; y += 1) {
    const v = ny(y);
    for (let x = 0; x < width; x += 1) {
      const u = nx(x);
      const index = y * width + x;
      for (let channel = 0; channel < 3; channel += 1) {
        const c = model.coefficients[channel]!;
        expected[index * 3 + channel] =
          c[0]! + c[1]! * u + c[2]! * v + c[3]! * u * u + c[4]! * u * v + c[5]! * v * v;
      }
    }
  }
  let background = floodBackground(rgb, expected, width, height, threshold);
  // Pass 2: a smooth correction (coarse grid of mean residuals over the pass-1 background,
  // bilinearly interpolated) lets the model follow backgrounds a quadratic cannot (cones, lights).
  refineModel(rgb, expected, background, width, height);
  background = floodBackground(rgb, expected, width, height, threshold);
  clearEnclosedBackground(rgb, expected, background, width, height, threshold);
  let mask: Uint8Array = new Uint8Array(pixels);
  for (let index = 0; index < pixels; index += 1) mask[index] = background[index] === 1 ? 0 : 1;
  mask = dilate(erode(mask, width, height), width, height); // opening: specks go
  mask = erode(dilate(mask, width, height), width, height); // closing: cracks close
  mask = dropSmallComponents(mask, width, Math.max(4, Math.round(pixels * 0.001)));
  refineEdges(rgb, expected, mask, width, height);
  return { mask, width, height, threshold };
}

/** Background = within `threshold` of `expected` and 4-connected to the border (explicit stack). */
function floodBackground(
  rgb: Uint8Array,
  expected: Float32Array,
  width: number,
  height: number,
  threshold: number,
): Uint8Array {
  const pixels = width * height;
  const limit = threshold * threshold;
  const near = (index: number) => {
    let distance = 0;
    for (let channel = 0; channel < 3; channel += 1) {
      const delta = rgb[index * 3 + channel]! - expected[index * 3 + channel]!;
      distance += delta * delta;
    }
    return distance <= limit;
  };
  const background = new Uint8Array(pixels);
  const stack = new Int32Array(pixels);
  let top = 0;
  const seed = (index: number) => {
    if (background[index] === 0 && near(index)) {
      background[index] = 1;
      stack[top] = index;
      top += 1;
    }
  };
  for (let x = 0; x < width; x += 1) {
    seed(x);
    seed((height - 1) * width + x);
  }
  for (let y = 0; y < height; y += 1) {
    seed(y * width);
    seed(y * width + width - 1);
  }
  while (top > 0) {
    top -= 1;
    const index = stack[top]!;
    const x = index % width;
    if (x > 0) seed(index - 1);
    if (x < width - 1) seed(index + 1);
    if (index >= width) seed(index - width);
    if (index < pixels - width) seed(index + width);
  }
  return background;
}

/**
 * Enclosed background (a ring's hole, a handle, the gap between arm and body): regions the flood
 * fill could not reach from the border whose pixels are all within `threshold` of the background
 * model and, on average, within half of it (a close match, not a pale subject that happens to be
 * near). Regions under 0.05 % of the image (at least 12 px) stay subject: a small light patch
 * inside a subject is more likely a highlight than a hole. Marks them as background in place.
 */
function clearEnclosedBackground(
  rgb: Uint8Array,
  expected: Float32Array,
  background: Uint8Array,
  width: number,
  height: number,
  threshold: number,
): void {
  const pixels = width * height;
  const limit = threshold * threshold;
  const distance = new Float32Array(pixels);
  for (let index = 0; index < pixels; index += 1) {
    let squared = 0;
    for (let channel = 0; channel < 3; channel += 1) {
      const delta = rgb[index * 3 + channel]! - expected[index * 3 + channel]!;
      squared += delta * delta;
    }
    distance[index] = squared;
  }
  const minArea = Math.max(12, Math.round(pixels * 0.0005));
  const seen = new Uint8Array(pixels);
  const stack = new Int32Array(pixels);
  const members: number[] = [];
  for (let start = 0; start < pixels; start += 1) {
    if (background[start] === 1 || seen[start] === 1 || distance[start]! > limit) continue;
    members.length = 0;
    let top = 0;
    let sum = 0;
    stack[top++] = start;
    seen[start] = 1;
    while (top > 0) {
      const index = stack[--top]!;
      members.push(index);
      sum += Math.sqrt(distance[index]!);
      const x = index % width;
      const neighbours = [
        x > 0 ? index - 1 : -1,
        x < width - 1 ? index + 1 : -1,
        index >= width ? index - width : -1,
        index < pixels - width ? index + width : -1,
      ];
      for (const next of neighbours) {
        if (next >= 0 && seen[next] === 0 && background[next] === 0 && distance[next]! <= limit) {
          seen[next] = 1;
          stack[top++] = next;
        }
      }
    }
    if (members.length >= minArea && sum / members.length <= threshold / 2) {
      for (const index of members) background[index] = 1;
    }
  }
}

/**
 * Puts the edge where the colour is halfway between subject and background. A low threshold
 * makes a pixel that is mostly background (blurred by the lens, the JPEG and the working copy's
 * light blur) count as subject, which grew every cut-out by about a pixel all round. Each subject
 * pixel next to the background is compared with the most distinct subject pixel within 2 px: if
 * its distance from the background model is under half of that one's, it is background. Two passes.
 */
function refineEdges(
  rgb: Uint8Array,
  expected: Float32Array,
  mask: Uint8Array,
  width: number,
  height: number,
): void {
  const pixels = width * height;
  const distance = new Float32Array(pixels);
  for (let index = 0; index < pixels; index += 1) {
    let squared = 0;
    for (let channel = 0; channel < 3; channel += 1) {
      const delta = rgb[index * 3 + channel]! - expected[index * 3 + channel]!;
      squared += delta * delta;
    }
    distance[index] = Math.sqrt(squared);
  }
  for (let pass = 0; pass < 2; pass += 1) {
    const clear: number[] = [];
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        const index = y * width + x;
        if (mask[index] !== 1) continue;
        const onEdge =
          (x > 0 && mask[index - 1] === 0) ||
          (x < width - 1 && mask[index + 1] === 0) ||
          (y > 0 && mask[index - width] === 0) ||
          (y < height - 1 && mask[index + width] === 0);
        if (!onEdge) continue;
        let contrast = 0;
        for (let dy = -2; dy <= 2; dy += 1) {
          const ny = y + dy;
          if (ny < 0 || ny >= height) continue;
          for (let dx = -2; dx <= 2; dx += 1) {
            const nx = x + dx;
            if (nx < 0 || nx >= width || mask[ny * width + nx] !== 1) continue;
            contrast = Math.max(contrast, distance[ny * width + nx]!);
          }
        }
        if (distance[index]! < 0.5 * contrast) clear.push(index);
      }
    }
    for (const index of clear) mask[index] = 0;
  }
}

/** Adds to `expected` the bilinearly interpolated mean residual of the background per grid cell. */
function refineModel(
  rgb: Uint8Array,
  expected: Float32Array,
  background: Uint8Array,
  width: number,
  height: number,
): void {
  const grid = 8;
  const cellsX = Math.min(grid, width);
  const cellsY = Math.min(grid, height);
  const sums = new Float64Array(cellsX * cellsY * 3);
  const counts = new Float64Array(cellsX * cellsY);
  for (let y = 0; y < height; y += 1) {
    const cy = Math.min(cellsY - 1, Math.floor((y * cellsY) / height));
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      if (background[index] !== 1) continue;
      const cell = cy * cellsX + Math.min(cellsX - 1, Math.floor((x * cellsX) / width));
      counts[cell]! += 1;
      for (let channel = 0; channel < 3; channel += 1) {
        sums[cell * 3 + channel]! += rgb[index * 3 + channel]! - expected[index * 3 + channel]!;
      }
    }
  }
  const cellArea = (width / cellsX) * (height / cellsY);
  const mean = (cx: number, cy: number, channel: number) => {
    const cell = cy * cellsX + cx;
    // Cells mostly covered by the subject keep the surface (no correction).
    return counts[cell]! >= 0.1 * cellArea ? sums[cell * 3 + channel]! / counts[cell]! : 0;
  };
  for (let y = 0; y < height; y += 1) {
    const gy = Math.max(0, Math.min(cellsY - 1, ((y + 0.5) * cellsY) / height - 0.5));
    const y0 = Math.floor(gy);
    const y1 = Math.min(cellsY - 1, y0 + 1);
    const fy = gy - y0;
    for (let x = 0; x < width; x += 1) {
      const gx = Math.max(0, Math.min(cellsX - 1, ((x + 0.5) * cellsX) / width - 0.5));
      const x0 = Math.floor(gx);
      const x1 = Math.min(cellsX - 1, x0 + 1);
      const fx = gx - x0;
      const index = y * width + x;
      for (let channel = 0; channel < 3; channel += 1) {
        const correction =
          (1 - fy) * ((1 - fx) * mean(x0, y0, channel) + fx * mean(x1, y0, channel)) +
          fy * ((1 - fx) * mean(x0, y1, channel) + fx * mean(x1, y1, channel));
        expected[index * 3 + channel]! += correction;
      }
    }
  }
}

/** Robust quadratic colour surface over the border band: coefficients per channel and noise. */
function fitBorderModel(rgb: Uint8Array, width: number, height: number) {
  const depth = Math.max(1, Math.min(3, Math.floor(Math.min(width, height) / 16)));
  const samples: number[] = [];
  const step = Math.max(1, Math.floor((2 * (width + height) * depth) / 6000));
  let counter = 0;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const onBorder = x < depth || y < depth || x >= width - depth || y >= height - depth;
      if (!onBorder) {
        if (x === depth && y >= depth && y < height - depth) x = width - depth - 1;
        continue;
      }
      counter += 1;
      if (counter % step === 0) samples.push(y * width + x);
    }
  }
  const nx = (x: number) => (width === 1 ? 0 : (2 * x) / (width - 1) - 1);
  const ny = (y: number) => (height === 1 ? 0 : (2 * y) / (height - 1) - 1);
  const features = samples.map((index) => {
    const u = nx(index % width);
    const v = ny(Math.floor(index / width));
    return [1, u, v, u * u, u * v, v * v];
  });
  let weights = samples.map(() => 1);
  let coefficients = [0, 1, 2].map(() => [0, 0, 0, 0, 0, 0]);
  let sigma = 0;
  for (let iteration = 0; iteration < 5; iteration += 1) {
    coefficients = [0, 1, 2].map((channel) =>
      solveLeastSquares(
        features,
        samples.map((index) => rgb[index * 3 + channel]!),
        weights,
      ),
    );
    const residuals = samples.map((index, sample) => {
      const f = features[sample]!;
      let squared = 0;
      for (let channel = 0; channel < 3; channel += 1) {
        const c = coefficients[channel]!;
        let expected = 0;
        for (let term = 0; term < 6; term += 1) expected += c[term]! * f[term]!;
        const delta = rgb[index * 3 + channel]! - expected;
        squared += delta * delta;
      }
      return Math.sqrt(squared);
    });
    const sorted = [...residuals].sort((a, b) => a - b);
    // Half the border may be subject: the median residual describes the background's noise.
    sigma = 1.4826 * (sorted[Math.floor(sorted.length / 2)] ?? 0);
    const cutoff = Math.max(12, 3 * sigma);
    weights = residuals.map((residual) => (residual <= cutoff ? 1 : 0));
  }
  return { coefficients, sigma };
}

/** Weighted least squares for 6 terms (normal equations, Gaussian elimination with pivoting). */
function solveLeastSquares(features: number[][], values: number[], weights: number[]): number[] {
  const n = 6;
  const a = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  let total = 0;
  for (let sample = 0; sample < features.length; sample += 1) {
    const w = weights[sample]!;
    if (w === 0) continue;
    total += w;
    const f = features[sample]!;
    for (let row = 0; row < n; row += 1) {
      for (let column = 0; column < n; column += 1) a[row]![column]! += w * f[row]! * f[column]!;
      a[row]![n]! += w * f[row]! * values[sample]!;
    }
  }
  if (total === 0) return [0, 0, 0, 0, 0, 0];
  // A little ridge keeps degenerate borders (1-px images, constant rows) solvable.
  for (let row = 0; row < n; row += 1) a[row]![row]! += 1e-6 * total;
  for (let column = 0; column < n; column += 1) {
    let pivot = column;
    for (let row = column + 1; row < n; row += 1) {
      if (Math.abs(a[row]![column]!) > Math.abs(a[pivot]![column]!)) pivot = row;
    }
    [a[column], a[pivot]] = [a[pivot]!, a[column]!];
    const divisor = a[column]![column]!;
    if (Math.abs(divisor) < 1e-12) continue;
    for (let row = 0; row < n; row += 1) {
      if (row === column) continue;
      const factor = a[row]![column]! / divisor;
      for (let k = column; k <= n; k += 1) a[row]![k]! -= factor * a[column]![k]!;
    }
  }
  return a.map((row, index) => (Math.abs(row[index]!) < 1e-12 ? 0 : row[n]! / row[index]!));
}

function erode(mask: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      out[index] =
        mask[index] === 1 &&
        (x === 0 || mask[index - 1] === 1) &&
        (x === width - 1 || mask[index + 1] === 1) &&
        (y === 0 || mask[index - width] === 1) &&
        (y === height - 1 || mask[index + width] === 1)
          ? 1
          : 0;
    }
  }
  return out;
}

function dilate(mask: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(mask.length);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const index = y * width + x;
      out[index] =
        mask[index] === 1 ||
        (x > 0 && mask[index - 1] === 1) ||
        (x < width - 1 && mask[index + 1] === 1) ||
        (y > 0 && mask[index - width] === 1) ||
        (y < height - 1 && mask[index + width] === 1)
          ? 1
          : 0;
    }
  }
  return out;
}

/** Removes 4-connected subject components smaller than `minArea` pixels. */
function dropSmallComponents(mask: Uint8Array, width: number, minArea: number): Uint8Array {
  const pixels = mask.length;
  const label = new Int32Array(pixels).fill(-1);
  const stack = new Int32Array(pixels);
  const out = new Uint8Array(mask);
  const members: number[] = [];
  for (let start = 0; start < pixels; start += 1) {
    if (mask[start] !== 1 || label[start] !== -1) continue;
    members.length = 0;
    let top = 0;
    stack[top++] = start;
    label[start] = start;
    while (top > 0) {
      const index = stack[--top]!;
      members.push(index);
      const x = index % width;
      const neighbours = [
        x > 0 ? index - 1 : -1,
        x < width - 1 ? index + 1 : -1,
        index >= width ? index - width : -1,
        index < pixels - width ? index + width : -1,
      ];
      for (const next of neighbours) {
        if (next >= 0 && mask[next] === 1 && label[next] === -1) {
          label[next] = start;
          stack[top++] = next;
        }
      }
    }
    if (members.length < minArea) for (const index of members) out[index] = 0;
  }
  return out;
}
