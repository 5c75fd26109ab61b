import type { DecodeLimits, ImageFormat, ImageHeader } from "@pixport/core";
import { IMAGE_FORMATS, sniffImageFormat } from "@pixport/core";
import type { Size } from "@pixport/core/adapter-kit";
import type { Metadata } from "sharp";
import sharp from "sharp";
import { asBuffer } from "./errors.js";
import type { ResolvedSharpImageCodecOptions } from "./options.js";

export async function probe(input: Uint8Array): Promise<ImageHeader | null> {
  const bytes = asBuffer(input, "input");
  const format = sniffImageFormat(bytes);
  if (format === null) return null;
  try {
    // Header only: metadata() never decodes pixels, so the pixel cap is off here on purpose; a
    // decompression bomb reports its real size and the caller refuses it.
    const metadata = await sharp(bytes, { limitInputPixels: false, failOn: "warning" }).metadata();
    if (ourFormat(metadata) !== format || !(metadata.width > 0) || !(metadata.height > 0)) return null;
    const frames = frameCount(metadata, format);
    return frames > 1 ? { format, ...orientedSize(metadata), frames } : { format, ...orientedSize(metadata) };
  } catch {
    return null;
  }
}

/** pixport's name of what libvips read: HEIF coded with AV1 is `avif`; HEVC is not readable here. */
export function ourFormat(metadata: Metadata): ImageFormat | null {
  if (metadata.format === "heif") return metadata.compression === "av1" ? "avif" : null;
  return (IMAGE_FORMATS as readonly string[]).includes(metadata.format)
    ? (metadata.format as ImageFormat)
    : null;
}

/** Frames of an animation or pages of a TIFF (AVIF image sequences are read as their primary image). */
export function frameCount(metadata: Metadata, format: ImageFormat): number {
  if (format !== "gif" && format !== "webp" && format !== "tiff") return 1;
  return Math.max(1, metadata.pages ?? 1);
}

export function limitFor(limits: DecodeLimits | undefined, settings: ResolvedSharpImageCodecOptions): number {
  const requested = limits?.maxInputPixels;
  return typeof requested === "number" && Number.isFinite(requested) && requested > 0
    ? Math.floor(requested)
    : settings.maxInputPixels;
}

/** Width and height after EXIF orientation: orientations 5 to 8 turn the image by 90°. */
export function orientedSize(metadata: {
  width: number;
  height: number;
  orientation?: number | undefined;
}): Size {
  const turned = metadata.orientation !== undefined && metadata.orientation >= 5 && metadata.orientation <= 8;
  return turned
    ? { width: metadata.height, height: metadata.width }
    : { width: metadata.width, height: metadata.height };
}
