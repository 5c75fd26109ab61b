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

/** The image's own pixels for {@link cutoutPng}: sRGB, with alpha only where it has alpha. */
export interface CutoutPixels {
  data: Buffer;
  channels: 3 | 4;
}

/**
 * Decodes the pixels {@link cutoutPng} joins the mask to. A remover can start it while its model
 * runs and hand the promise to `cutoutPng`, so the decode costs no time of its own.
 */
export async function decodeCutoutPixels(image: RequestImage): Promise<CutoutPixels> {
  const source = image.source().toColourspace("srgb");
  if (image.hasAlpha) return { data: await source.ensureAlpha().raw().toBuffer(), channels: 4 };
  return { data: await source.removeAlpha().raw().toBuffer(), channels: 3 };
}

/**
 * The last step: `alpha` (one byte per pixel at the image's size) joined to the image's own RGB as
 * an RGBA PNG. Where the image already had alpha the result is never more opaque than it was (the
 * lower of the two alphas, per pixel); an opaque image gets `alpha` as it is, joined by libvips.
 * `pixels` is the image's {@link decodeCutoutPixels}, when the caller started it already.
 */
export async function cutoutPng(
  image: RequestImage,
  alpha: Buffer,
  pixels: Promise<CutoutPixels> = decodeCutoutPixels(image),
): Promise<Uint8Array> {
  const { width, height } = image;
  const { data, channels } = await pixels;
  let joined: Sharp;
  if (channels === 3) {
    joined = sharp(data, { raw: { width, height, channels: 3 } }).joinChannel(alpha, {
      raw: { width, height, channels: 1 },
    });
  } else {
    for (let pixel = 0; pixel < alpha.length; pixel += 1) {
      const at = pixel * 4 + 3;
      data[at] = Math.min(data[at]!, alpha[pixel]!);
    }
    joined = sharp(data, { raw: { width, height, channels: 4 } });
  }
  const png = await joined.png({ compressionLevel: 6 }).toBuffer();
  return new Uint8Array(png.buffer, png.byteOffset, png.byteLength);
}
