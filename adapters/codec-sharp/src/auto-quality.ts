import type { EncodedImage } from "@pixport/core";
import type { OutputOptions, PixelData } from "@pixport/core/adapter-kit";
import { encodeAtAutoQuality } from "@pixport/core/adapter-kit";
import type { Sharp } from "sharp";
import sharp from "sharp";
import { encode } from "./encode.js";
import { sharpColor } from "./passes.js";

/** Formats whose quality this codec chooses itself (`output.autoQuality`). */
export const AUTO_QUALITY_FORMATS = ["jpeg", "webp", "avif"] as const;

/**
 * Encodes `source` at the lowest quality found to keep `output.autoQuality`'s SSIM against its own
 * pixels (`encodeAtAutoQuality`: at most five encodes), each encode decoded by sharp to be measured.
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
  const shown = async (image: Sharp): Promise<PixelData> => {
    const flat = await bounded(image.flatten({ background }).raw()).toBuffer({ resolveWithObject: true });
    return {
      data: flat.data,
      width: flat.info.width,
      height: flat.info.height,
      channels: flat.info.channels,
    };
  };
  const { encoded, quality } = await encodeAtAutoQuality(pixels, output.autoQuality, output.quality, {
    encode: (from, quality) => encode(bounded(fromRaw(from)), { ...output, quality }),
    // Without alpha there is nothing to flatten.
    shown: async (from) => (from.channels % 2 === 1 ? from : await shown(fromRaw(from))),
    decoded: (candidate) => shown(sharp(candidate.data)),
  });
  return { ...encoded, quality };
}

function fromRaw(pixels: PixelData): Sharp {
  const { width, height } = pixels;
  const channels = pixels.channels as 1 | 2 | 3 | 4;
  return sharp(pixels.data, { raw: { width, height, channels }, limitInputPixels: false });
}
