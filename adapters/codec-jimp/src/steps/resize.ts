import { createJimp } from "@jimp/core";
import { methods as resizeMethods } from "@jimp/plugin-resize";
import type { Position, ResizeStep } from "@pixport/core";
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
  // sharp's crop offsets: (free + 1) / 2 for centre, rounded down.
  const left = alignX === 0.5 ? Math.floor((outerWidth - width + 1) / 2) : alignX * (outerWidth - width);
  const top = alignY === 0.5 ? Math.floor((outerHeight - height + 1) / 2) : alignY * (outerHeight - height);
  return crop(outer, left, top, width, height);
}

/** Copies `image` into `canvas` at (left, top): an embed, like sharp's, so the image's own alpha stays. */
function copyInto(canvas: Bitmap, image: Bitmap, left: number, top: number): void {
  const rowBytes = image.width * 4;
  for (let y = 0; y < image.height; y += 1) {
    image.data.copy(canvas.data, ((top + y) * canvas.width + left) * 4, y * rowBytes, (y + 1) * rowBytes);
  }
}
