import jpeg from "@jimp/js-jpeg";
import png from "@jimp/js-png";
import type { ImageFormat } from "@pixport/core";
import { sniffImageFormat } from "@pixport/core";
import type { Rgba } from "@pixport/core/adapter-kit";
import { FORMAT_LIST, imageTooLarge, invalidImage, unsupportedOperation } from "@pixport/core/adapter-kit";
import { applyOrientation, type Bitmap, flatten, isOpaque } from "./bitmap.js";
import { asBuffer, translateDecodeError } from "./errors.js";
import { decodeAvif, encodeAvif } from "./formats/avif.js";
import { decodeGif, encodeGif, type Frames } from "./formats/gif.js";
import { decodeTiff, encodeTiff } from "./formats/tiff.js";
import { type JimpHeader, readHeader } from "./header.js";
import { decodeWebp, encodeWebp } from "./webp.js";

export type { Frames } from "./formats/gif.js";

/** jimp's format plugins (jpeg-js and pngjs); WebP goes through `webp.ts`. */
const JPEG = jpeg();
const PNG = png();

/** PNG zlib level: 6 is zlib's own balance of size and speed (and what the sharp codec uses). */
const PNG_DEFLATE_LEVEL = 6;
/** pngjs filter 5 = adaptive (per row, like libpng's default); 0 = none. */
const PNG_FILTER_ADAPTIVE = -1;
/** pngjs colour types. */
const PNG_COLOR_RGB = 2;
const PNG_COLOR_RGBA = 6;

/** Header facts plus the size after EXIF orientation. */
export interface CheckedHeader extends JimpHeader {
  orientedWidth: number;
  orientedHeight: number;
}

/**
 * Reads and checks the header of `bytes` without decoding pixels: the format from the magic bytes,
 * the size and orientation from the header, then the pixel cap and the decoder's own gaps. `what`
 * names the input in messages ("The input", "Overlay 2").
 */
export function checkHeader(bytes: Buffer, maxPixels: number, what: string): CheckedHeader {
  const format = sniffImageFormat(bytes);
  if (format === null) throw invalidImage(`${what} is not a ${FORMAT_LIST} image.`);
  const header = readHeader(bytes, format);
  if (header === null) throw invalidImage(`${what} has a malformed or truncated ${format} header.`);
  if (header.width * header.height * (header.frames ?? 1) > maxPixels) {
    throw imageTooLarge(what, header.width, header.height * (header.frames ?? 1), maxPixels);
  }
  if (header.unsupported !== undefined) throw unsupportedOperation(header.unsupported);
  const turned = header.orientation >= 5;
  return {
    ...header,
    orientedWidth: turned ? header.height : header.width,
    orientedHeight: turned ? header.width : header.height,
  };
}

/**
 * Decodes every frame of checked bytes: a GIF's frames with their delays and loop count; any other
 * format as one upright frame. Corrupt or truncated data → `INVALID_IMAGE`.
 */
export async function decodeFrames(input: Uint8Array, maxPixels: number, what: string): Promise<Frames> {
  const bytes = asBuffer(input, "input");
  const header = checkHeader(bytes, maxPixels, what);
  if (header.format !== "gif")
    return { frames: [await decode(bytes, maxPixels, what)], delays: [0], loop: null };
  let animation: Frames;
  try {
    animation = decodeGif(bytes);
  } catch (error) {
    throw translateDecodeError(error, what);
  }
  const first = animation.frames[0];
  if (first === undefined || first.width !== header.width || first.height !== header.height) {
    throw invalidImage(`${what} decoded to a size different from its header.`);
  }
  return animation;
}

/** Decodes checked bytes (the first frame) to an upright RGBA bitmap. Corrupt or truncated data → `INVALID_IMAGE`. */
export async function decode(input: Uint8Array, maxPixels: number, what: string): Promise<Bitmap> {
  const bytes = asBuffer(input, "input");
  const header = checkHeader(bytes, maxPixels, what);
  let bitmap: Bitmap;
  try {
    bitmap = await decodePixels(bytes, header);
  } catch (error) {
    throw translateDecodeError(error, what);
  }
  if (bitmap.width !== header.width || bitmap.height !== header.height) {
    throw invalidImage(`${what} decoded to a size different from its header.`);
  }
  return applyOrientation(bitmap, header.orientation);
}

async function decodePixels(bytes: Buffer, header: CheckedHeader): Promise<Bitmap> {
  switch (header.format) {
    case "jpeg": {
      // jpeg-js fills missing scan data with grey instead of failing; a file without its EOI marker
      // is truncated, and sharp (failOn: "warning") refuses those too.
      if (!hasJpegEnd(bytes)) throw invalidImage("The JPEG data is truncated (no end-of-image marker).");
      if (!hasQuantisationTables(bytes))
        throw invalidImage("The JPEG has no quantisation table before its scan.");
      const pixels = header.width * header.height;
      const decoded = JPEG.decode(bytes, {
        formatAsRGBA: true,
        tolerantDecoding: false,
        // Second line of defence behind the header check; jpeg-js also caps its own allocations.
        maxResolutionInMP: Math.ceil(pixels / 1e6) + 1,
        maxMemoryUsageInMB: Math.ceil((pixels * 12) / (1024 * 1024)) + 64,
      } as never) as { data: Uint8Array; width: number; height: number };
      return { data: asBuffer(decoded.data, "decoded"), width: decoded.width, height: decoded.height };
    }
    case "png": {
      const decoded = PNG.decode(bytes, { checkCRC: true } as never) as Bitmap;
      return decoded;
    }
    case "webp":
      return decodeWebp(bytes);
    case "gif": {
      const first = decodeGif(bytes).frames[0];
      if (first === undefined) throw invalidImage("The GIF has no frame.");
      return first;
    }
    case "tiff":
      return decodeTiff(bytes);
    case "avif":
      return decodeAvif(bytes);
  }
}

/**
 * True when a DQT segment comes before the first scan. jpeg-js decodes a table-less file to an
 * image of zeros; libjpeg (sharp) refuses it.
 */
function hasQuantisationTables(bytes: Uint8Array): boolean {
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return false;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      offset += 1;
      continue;
    }
    if (marker === 0xdb) return true;
    if (marker === 0xda || marker === 0xd9) return false;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    offset += 2 + ((bytes[offset + 2]! << 8) | bytes[offset + 3]!);
  }
  return false;
}

/** True when an EOI marker (FF D9) ends the data, allowing trailing padding bytes. */
function hasJpegEnd(bytes: Uint8Array): boolean {
  for (let index = bytes.length - 2; index >= Math.max(2, bytes.length - 4096); index -= 1) {
    if (bytes[index] === 0xff && bytes[index + 1] === 0xd9) return true;
  }
  return false;
}

/** Encoder settings. */
export interface EncodeSettings {
  format: ImageFormat;
  quality: number;
  flattenBackground: Rgba;
}

/** Encodes an RGBA bitmap; jpeg output is flattened onto `flattenBackground` first. */
export async function encode(bitmap: Bitmap, settings: EncodeSettings): Promise<Buffer> {
  const quality = Math.min(100, Math.max(1, Math.round(settings.quality)));
  switch (settings.format) {
    case "jpeg": {
      let opaque = bitmap;
      if (!isOpaque(bitmap)) {
        opaque = { ...bitmap, data: Buffer.from(bitmap.data) };
        flatten(opaque, settings.flattenBackground);
      }
      return Buffer.from(JPEG.encode(opaque as never, { quality }) as Uint8Array);
    }
    case "png":
      return Buffer.from(
        PNG.encode(
          bitmap as never,
          {
            deflateLevel: PNG_DEFLATE_LEVEL,
            filterType: PNG_FILTER_ADAPTIVE,
            colorType: isOpaque(bitmap) ? PNG_COLOR_RGB : PNG_COLOR_RGBA,
            inputHasAlpha: true,
          } as never,
        ) as Uint8Array,
      );
    case "webp":
      return encodeWebp(bitmap, quality);
    case "avif":
      return encodeAvif(bitmap, quality);
    case "gif":
      return encodeGif({ frames: [bitmap], delays: [0], loop: null });
    case "tiff":
      return encodeTiff(bitmap);
  }
}

/** Encodes an animation (frames of one size); only GIF keeps every frame, other formats the first. */
export async function encodeFrames(animation: Frames, settings: EncodeSettings): Promise<Buffer> {
  if (settings.format === "gif") return encodeGif(animation);
  const first = animation.frames[0];
  if (first === undefined) throw new Error("encodeFrames needs a frame");
  return encode(first, settings);
}
