import type { EncodedImage } from "@pixport/core";
import type { OutputOptions, PixelData } from "@pixport/core/adapter-kit";
import { encodeAtAutoQuality } from "@pixport/core/adapter-kit";
import type { Sharp } from "sharp";
import sharp from "sharp";
import { ssim } from "ssim.js";
import { encode } from "./encode.js";
import { sharpColor } from "./passes.js";

/** Formats whose quality this codec chooses itself (`output.autoQuality`). */
export const AUTO_QUALITY_FORMATS = ["jpeg", "webp", "avif"] as const;

/** RGBA pixels as ssim.js reads them. */
type Shown = { data: Uint8ClampedArray; width: number; height: number };

/**
 * Mean SSIM by ssim.js (MIT, no dependencies, pure JavaScript): its `bezkrovny` algorithm, about
 * five times faster than its default (`weber`) and within about 0.001 of it on the photo corpus,
 * with its default downsampling (`maxSize` puts a probe at the whole output's scale).
 */
export function measuredSsim(reference: Shown, candidate: Shown, maxSize: number): number {
  return ssim(reference, candidate, { ssim: "bezkrovny", maxSize }).mssim;
}

/**
 * Encodes `source` at the lowest quality found to keep `output.autoQuality`'s SSIM against its own
 * pixels (`encodeAtAutoQuality`: at most five encodes), measured by {@link measuredSsim}.
 */
export async function encodeAutoQuality(
  source: Sharp,
  output: OutputOptions & { autoQuality: NonNullable<OutputOptions["autoQuality"]> },
  bounded: (image: Sharp) => Sharp,
): Promise<EncodedImage> {
  const { data, info } = await bounded(source.raw({ depth: "uchar" })).toBuffer({ resolveWithObject: true });
  const pixels: PixelData = { data, width: info.width, height: info.height, channels: info.channels };
  const background = sharpColor(output.flattenBackground);
  // Compared as they are shown: flattened onto the background the JPEG encoder uses too.
  const shown = async (image: Sharp): Promise<Shown> => {
    const flat = await bounded(image.flatten({ background }).ensureAlpha().raw()).toBuffer({
      resolveWithObject: true,
    });
    const { buffer, byteOffset, length } = flat.data;
    return {
      data: new Uint8ClampedArray(buffer, byteOffset, length),
      width: flat.info.width,
      height: flat.info.height,
    };
  };
  const references = new Map<PixelData, Promise<Shown>>();
  const { encoded, quality } = await encodeAtAutoQuality(pixels, output.autoQuality, output.quality, {
    encode: (from, quality) => encode(bounded(fromRaw(from)), { ...output, quality }),
    async similarity(reference, candidate, maxSize) {
      let shownReference = references.get(reference);
      if (shownReference === undefined) {
        shownReference = shown(fromRaw(reference));
        references.set(reference, shownReference);
      }
      return measuredSsim(await shownReference, await shown(sharp(candidate.data)), maxSize);
    },
  });
  return { ...encoded, quality };
}

function fromRaw(pixels: PixelData): Sharp {
  const { width, height } = pixels;
  const channels = pixels.channels as 1 | 2 | 3 | 4;
  return sharp(pixels.data, { raw: { width, height, channels }, limitInputPixels: false });
}
