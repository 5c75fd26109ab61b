import type { AutoQualityTarget, PixelData } from "@pixport/core/adapter-kit";
import { encodeAtAutoQuality } from "@pixport/core/adapter-kit";
import { type Bitmap, flatten } from "./bitmap.js";
import { decode, type EncodeSettings, encode } from "./codecs.js";

/** Formats whose quality this codec chooses itself (`output.autoQuality`). */
export const AUTO_QUALITY_FORMATS = ["jpeg", "webp", "avif"] as const;

/** `bitmap` flattened onto `background` (a copy), as shown. */
function shown(bitmap: Bitmap, background: EncodeSettings["flattenBackground"]): PixelData {
  const copy = { ...bitmap, data: Buffer.from(bitmap.data) };
  flatten(copy, background);
  return { data: copy.data, width: copy.width, height: copy.height, channels: 4 };
}

/**
 * Encodes `bitmap` at the lowest quality found to keep `target`'s SSIM against its own pixels
 * (`encodeAtAutoQuality`: at most five encodes), each encode decoded by this codec to be measured.
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
  const { encoded, quality } = await encodeAtAutoQuality(pixels, target, settings.quality, {
    encode: (from, quality) => encode(asBitmap(from), { ...settings, quality }),
    shown: async (from) => shown(asBitmap(from), settings.flattenBackground),
    decoded: async (candidate) =>
      shown(await decode(candidate, Number.MAX_SAFE_INTEGER, "The output"), settings.flattenBackground),
  });
  return { data: encoded, quality };
}
