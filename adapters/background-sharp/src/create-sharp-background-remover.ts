import type { BackgroundRemovalOptions, BackgroundRemovalRequest, BackgroundRemover } from "@pixport/core";
import { cutoutPng, openRemovalImage, parseOptions } from "@pixport/core/adapter-kit";
import sharp from "sharp";
import { z } from "zod";
import { computeMask } from "./mask.js";

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
     * as subject. The threshold grows with the background's noise (see docs/ocr-and-background.md). @default 22
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
      const image = await openRemovalImage(sharp, request, settings.maxInputPixels);
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
