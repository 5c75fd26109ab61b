import { fitBorderModel, refineModel } from "./background-model.js";
import { dilate, dropSmallComponents, erode } from "./morphology.js";

/** The subject mask of {@link computeMask}. */
export interface MaskResult {
  /** 1 = subject, 0 = background; `width * height` entries. */
  mask: Uint8Array;
  width: number;
  height: number;
  /** The colour-distance threshold used. */
  threshold: number;
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
