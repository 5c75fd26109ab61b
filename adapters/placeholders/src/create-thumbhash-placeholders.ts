import type { PlaceholderEncoder, PlaceholderPixels } from "@pixport/core";
import { encode as encodeBlurhash } from "blurhash";
import { rgbaToThumbHash } from "thumbhash";

/** ThumbHash encodes images of at most this side. */
const THUMBHASH_MAX_SIDE = 100;
/** BlurHash components (x, y): 4 x 3 is the library's own recommendation for landscape pictures. */
const BLURHASH_COMPONENTS = [4, 3] as const;

/**
 * A {@link PlaceholderEncoder} on the maintained `thumbhash` (Evan Wallace's reference encoder) and
 * `blurhash` (Wolt's) packages. Pixels larger than 100 x 100 are refused with a `RangeError`
 * (the core hands over a sample of at most that size).
 *
 * @example
 * ```ts
 * import { createImagePipeline } from "@pixport/core";
 * import { createThumbhashPlaceholders } from "@pixport/placeholders";
 *
 * const pipeline = createImagePipeline({ codec, blobStore, images, keys, publisher, placeholders: createThumbhashPlaceholders() });
 * ```
 */
export function createThumbhashPlaceholders(): PlaceholderEncoder {
  return {
    thumbhash(pixels) {
      check(pixels);
      return Buffer.from(rgbaToThumbHash(pixels.width, pixels.height, pixels.data)).toString("base64");
    },
    blurhash(pixels) {
      check(pixels);
      const data = new Uint8ClampedArray(pixels.data.buffer, pixels.data.byteOffset, pixels.data.byteLength);
      return encodeBlurhash(data, pixels.width, pixels.height, ...BLURHASH_COMPONENTS);
    },
  };
}

function check(pixels: PlaceholderPixels): void {
  if (
    !Number.isInteger(pixels.width) ||
    !Number.isInteger(pixels.height) ||
    pixels.width < 1 ||
    pixels.height < 1 ||
    pixels.width > THUMBHASH_MAX_SIDE ||
    pixels.height > THUMBHASH_MAX_SIDE
  ) {
    throw new RangeError(
      `Placeholders take 1..${THUMBHASH_MAX_SIDE} x 1..${THUMBHASH_MAX_SIDE} pixels, received ${pixels.width} x ${pixels.height}`,
    );
  }
  if (pixels.data.byteLength !== pixels.width * pixels.height * 4) {
    throw new RangeError(
      `Expected ${pixels.width * pixels.height * 4} RGBA bytes, received ${pixels.data.byteLength}`,
    );
  }
}
