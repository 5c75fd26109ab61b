import { createJimp } from "@jimp/core";
import { methods as resizeMethods } from "@jimp/plugin-resize";
import type { Position, ResizeStep } from "@pixport/core/adapter-kit";
import { type Bitmap, crop, filledBitmap, isOpaque, premultiply, unpremultiply } from "../bitmap.js";

/** A jimp class with only the plugin the codec uses; codecs and steps work on its bitmaps. */
const Jimp = createJimp({ plugins: [resizeMethods] });

/**
 * Scales to exactly `width` x `height` with jimp's default two-pass resampler (area averaging when
 * shrinking, linear when enlarging). Colour is premultiplied by alpha around the resize so
 * transparent pixels do not bleed their (meaningless) colour into edges, as sharp does.
 */
export function scale(bitmap: Bitmap, width: number, height: number): Bitmap {
  if (width === bitmap.width && height === bitmap.height) return bitmap;
  const opaque = isOpaque(bitmap);
  const working = opaque ? bitmap : { ...bitmap, data: Buffer.from(bitmap.data) };
  if (!opaque) premultiply(working);
  const image = new Jimp({ data: working.data, width: working.width, height: working.height });
  image.resize({ w: width, h: height });
  const result: Bitmap = { data: image.bitmap.data, width: image.bitmap.width, height: image.bitmap.height };
  if (!opaque) unpremultiply(result);
  return result;
}

/** Horizontal and vertical alignment (0 = start, 0.5 = centre, 1 = end) of each position. */
const ALIGN: Readonly<Record<Position, readonly [number, number]>> = {
  center: [0.5, 0.5],
  top: [0.5, 0],
  right: [1, 0.5],
  bottom: [0.5, 1],
  left: [0, 0.5],
  "top-left": [0, 0],
  "top-right": [1, 0],
  "bottom-left": [0, 1],
  "bottom-right": [1, 1],
  // Smart crops choose their own offset (see smartOffset); centred until then.
  entropy: [0.5, 0.5],
  attention: [0.5, 0.5],
};

/** ResizeStep semantics (fill / contain / cover with position and background), as sharp computes them. */
export function resize(bitmap: Bitmap, step: ResizeStep): Bitmap {
  const { width, height } = step;
  if (step.fit === "fill") return scale(bitmap, width, height);
  const [alignX, alignY] = ALIGN[step.position] ?? ALIGN.center;
  const ratioX = width / bitmap.width;
  const ratioY = height / bitmap.height;
  if (step.fit === "contain") {
    const factor = Math.min(ratioX, ratioY);
    const innerWidth = Math.min(width, Math.max(1, Math.round(bitmap.width * factor)));
    const innerHeight = Math.min(height, Math.max(1, Math.round(bitmap.height * factor)));
    const inner = scale(bitmap, innerWidth, innerHeight);
    if (innerWidth === width && innerHeight === height) return inner;
    const canvas = filledBitmap(width, height, step.background);
    // sharp's embed offsets: integer division of the free space (floor), scaled by the alignment.
    const left = alignX === 0.5 ? Math.floor((width - innerWidth) / 2) : alignX * (width - innerWidth);
    const top = alignY === 0.5 ? Math.floor((height - innerHeight) / 2) : alignY * (height - innerHeight);
    copyInto(canvas, inner, left, top);
    return canvas;
  }
  const factor = Math.max(ratioX, ratioY);
  const outerWidth = Math.max(width, Math.round(bitmap.width * factor));
  const outerHeight = Math.max(height, Math.round(bitmap.height * factor));
  const outer = scale(bitmap, outerWidth, outerHeight);
  if (step.position === "entropy" || step.position === "attention") {
    const [left, top] = smartOffset(outer, width, height, step.position);
    return crop(outer, left, top, width, height);
  }
  // sharp's crop offsets: (free + 1) / 2 for centre, rounded down.
  const left = alignX === 0.5 ? Math.floor((outerWidth - width + 1) / 2) : alignX * (outerWidth - width);
  const top = alignY === 0.5 ? Math.floor((outerHeight - height + 1) / 2) : alignY * (outerHeight - height);
  return crop(outer, left, top, width, height);
}

/** Luminance bins of the entropy crop (32 levels: enough to tell detail from flat areas, cheap to slide). */
const BINS = 32;

/**
 * The crop window of a cover resize chosen by content. Only one axis overflows after a cover
 * scale; the window slides along it in one pass over per-line statistics:
 * - `entropy`: the window whose luminance histogram has the highest Shannon entropy (libvips
 *   trims low-entropy edges instead; both keep the busiest region).
 * - `attention`: a documented approximation of libvips' saliency: the window with the most
 *   saturation plus edge energy (libvips also weighs skin tones; not done here).
 */
function smartOffset(
  image: Bitmap,
  width: number,
  height: number,
  strategy: "entropy" | "attention",
): [number, number] {
  const horizontal = image.width > width;
  if (!horizontal && image.height <= height) return [0, 0];
  const lines = horizontal ? image.width : image.height;
  const span = horizontal ? width : height;
  const across = horizontal ? image.height : image.width;
  const { data } = image;
  const at = (line: number, position: number) =>
    (horizontal ? position * image.width + line : line * image.width + position) * 4;
  const luma = (offset: number) =>
    (data[offset]! * 299 + data[offset + 1]! * 587 + data[offset + 2]! * 114) / 1000;
  let best = 0;
  if (strategy === "entropy") {
    const histograms = new Float64Array(lines * BINS);
    for (let line = 0; line < lines; line += 1) {
      for (let position = 0; position < across; position += 1) {
        const offset = at(line, position);
        const bin = Math.min(BINS - 1, Math.floor((luma(offset) * BINS) / 256));
        histograms[line * BINS + bin] = histograms[line * BINS + bin]! + data[offset + 3]! / 255;
      }
    }
    const window = new Float64Array(BINS);
    for (let line = 0; line < span; line += 1) {
      for (let bin = 0; bin < BINS; bin += 1) window[bin] = window[bin]! + histograms[line * BINS + bin]!;
    }
    const entropy = () => {
      let total = 0;
      for (const count of window) total += count;
      let sum = 0;
      for (const count of window) if (count > 0) sum -= (count / total) * Math.log2(count / total);
      return sum;
    };
    let bestScore = entropy();
    for (let start = 1; start + span <= lines; start += 1) {
      for (let bin = 0; bin < BINS; bin += 1) {
        window[bin] =
          window[bin]! - histograms[(start - 1) * BINS + bin]! + histograms[(start + span - 1) * BINS + bin]!;
      }
      const score = entropy();
      if (score > bestScore + 1e-9) {
        bestScore = score;
        best = start;
      }
    }
  } else {
    const scores = new Float64Array(lines);
    for (let line = 0; line < lines; line += 1) {
      let score = 0;
      for (let position = 0; position < across; position += 1) {
        const offset = at(line, position);
        const r = data[offset]!;
        const g = data[offset + 1]!;
        const b = data[offset + 2]!;
        const saturation = Math.max(r, g, b) - Math.min(r, g, b);
        const next = position + 1 < across ? at(line, position + 1) : offset;
        const across1 = Math.abs(luma(next) - luma(offset));
        const along = line + 1 < lines ? Math.abs(luma(at(line + 1, position)) - luma(offset)) : 0;
        score += (saturation + across1 + along) * (data[offset + 3]! / 255);
      }
      scores[line] = score;
    }
    let sum = 0;
    for (let line = 0; line < span; line += 1) sum += scores[line]!;
    let bestScore = sum;
    for (let start = 1; start + span <= lines; start += 1) {
      sum += scores[start + span - 1]! - scores[start - 1]!;
      if (sum > bestScore + 1e-9) {
        bestScore = sum;
        best = start;
      }
    }
  }
  return horizontal ? [best, 0] : [0, best];
}

/** Copies `image` into `canvas` at (left, top): an embed, like sharp's, so the image's own alpha stays. */
function copyInto(canvas: Bitmap, image: Bitmap, left: number, top: number): void {
  const rowBytes = image.width * 4;
  for (let y = 0; y < image.height; y += 1) {
    image.data.copy(canvas.data, ((top + y) * canvas.width + left) * 4, y * rowBytes, (y + 1) * rowBytes);
  }
}
