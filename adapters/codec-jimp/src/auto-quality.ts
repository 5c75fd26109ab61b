import type { AutoQualityTarget, PixelData } from "@pixport/core/adapter-kit";
import { encodeAtAutoQuality } from "@pixport/core/adapter-kit";
import { ssim } from "ssim.js";
import { type Bitmap, flatten } from "./bitmap.js";
import { decode, type EncodeSettings, encode } from "./codecs.js";

/** Formats whose quality this codec chooses itself (`output.autoQuality`). */
export const AUTO_QUALITY_FORMATS = ["jpeg", "webp", "avif"] as const;

/** RGBA pixels as ssim.js reads them. */
type Shown = { data: Uint8ClampedArray; width: number; height: number };

/** `bitmap` flattened onto `background` (a copy), as ssim.js reads it. */
function shown(bitmap: Bitmap, background: EncodeSettings["flattenBackground"]): Shown {
  const copy = { ...bitmap, data: Buffer.from(bitmap.data) };
  flatten(copy, background);
  return {
    data: new Uint8ClampedArray(copy.data.buffer, copy.data.byteOffset, copy.data.length),
    width: copy.width,
    height: copy.height,
  };
}

/**
 * Encodes `bitmap` at the lowest quality found to keep `target`'s SSIM against its own pixels
 * (`encodeAtAutoQuality`: at most five encodes). SSIM by ssim.js's `bezkrovny` algorithm, as the
 * sharp codec measures it (see its `measuredSsim`), on the outputs decoded by this codec.
 */
export async function encodeAutoQuality(
  bitmap: Bitmap,
  settings: EncodeSettings,
  target: AutoQualityTarget,
): Promise<{ data: Buffer; quality: number }> {
  const asBitmap = (pixels: PixelData): Bitmap => ({
    data: Buffer.from(pixels.data.buffer, pixels.data.byteOffset, pixels.data.byteLength),
    width: pixels.width,
    height: pixels.height,
  });
  const pixels: PixelData = { data: bitmap.data, width: bitmap.width, height: bitmap.height, channels: 4 };
  const references = new Map<PixelData, Shown>();
  const { encoded, quality } = await encodeAtAutoQuality(pixels, target, settings.quality, {
    encode: (from, quality) => encode(asBitmap(from), { ...settings, quality }),
    async similarity(reference, candidate, maxSize) {
      let shownReference = references.get(reference);
      if (shownReference === undefined) {
        shownReference = shown(asBitmap(reference), settings.flattenBackground);
        references.set(reference, shownReference);
      }
      const decoded = shown(
        await decode(candidate, Number.MAX_SAFE_INTEGER, "The output"),
        settings.flattenBackground,
      );
      return ssim(shownReference, decoded, { ssim: "bezkrovny", maxSize }).mssim;
    },
  });
  return { data: encoded, quality };
}
