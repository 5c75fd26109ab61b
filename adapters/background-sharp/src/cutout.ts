import type { BackgroundRemovalRequest } from "@pixport/core";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import sharp, { type Sharp } from "sharp";

/** A {@link BackgroundRemovalRequest}'s image, opened and checked (see {@link openRequestImage}). */
export interface RequestImage {
  /** A fresh sharp pipeline over the bytes, EXIF-oriented, with the decoder limits. */
  source(): Sharp;
  /** Displayed (EXIF-oriented) size, equal to the request's. */
  width: number;
  height: number;
  hasAlpha: boolean;
}

/**
 * The first step of every sharp-based {@link BackgroundRemover}: reads the header of the request's
 * bytes (undecodable bytes: `INVALID_IMAGE`) and checks the EXIF-oriented size against the size
 * the core recorded (a mismatch means the bytes are not what the core stored: `INTERNAL`).
 */
export async function openRequestImage(
  request: BackgroundRemovalRequest,
  maxInputPixels: number,
): Promise<RequestImage> {
  const source = () =>
    sharp(request.image, { limitInputPixels: maxInputPixels, failOn: "error", autoOrient: true });
  const meta = await source()
    .metadata()
    .catch((error: unknown) => {
      throw new ImagePipelineError(
        ErrorCodes.INVALID_IMAGE,
        `The image cannot be decoded: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    });
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  if (width !== request.width || height !== request.height) {
    throw new ImagePipelineError(
      ErrorCodes.INTERNAL,
      `The image is ${width} x ${height}, expected ${request.width} x ${request.height}.`,
    );
  }
  return { source, width, height, hasAlpha: meta.hasAlpha === true };
}

/**
 * The last step: `alpha` (one byte per pixel at the image's size) joined to the image's own RGB as
 * an RGBA PNG. Where the image already had alpha the result is never more opaque than it was.
 */
export async function cutoutPng(image: RequestImage, alpha: Buffer): Promise<Uint8Array> {
  const { width, height } = image;
  // One decode: the image as RGBA (alpha 255 where it had none), its alpha then lowered to `alpha`.
  const rgba = await image.source().toColourspace("srgb").ensureAlpha().raw().toBuffer();
  for (let pixel = 0; pixel < alpha.length; pixel += 1) {
    const at = pixel * 4 + 3;
    rgba[at] = Math.min(rgba[at]!, alpha[pixel]!);
  }
  const png = await sharp(rgba, { raw: { width, height, channels: 4 } })
    .png({ compressionLevel: 6 })
    .toBuffer();
  return new Uint8Array(png.buffer, png.byteOffset, png.byteLength);
}
