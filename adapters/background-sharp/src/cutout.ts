import type { BackgroundRemovalRequest } from "@pixport/core";
import {
  type CutoutPixels,
  checkRemovalImageSize,
  lowerAlpha,
  undecodableRemovalImage,
} from "@pixport/core/adapter-kit";
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
 * The first step of the remover: reads the header of the request's bytes (undecodable bytes:
 * `INVALID_IMAGE`) and checks the EXIF-oriented size against the size the core recorded (a
 * mismatch means the bytes are not what the core stored: `INTERNAL`).
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
      throw undecodableRemovalImage(error);
    });
  const width = meta.autoOrient?.width ?? meta.width;
  const height = meta.autoOrient?.height ?? meta.height;
  checkRemovalImageSize(request, { width, height });
  return { source, width, height, hasAlpha: meta.hasAlpha === true };
}

/** Decodes the pixels {@link cutoutPng} joins the mask to: sRGB, with alpha only where it has alpha. */
export async function decodeCutoutPixels(image: RequestImage): Promise<CutoutPixels> {
  const source = image.source().toColourspace("srgb");
  if (image.hasAlpha) return { data: await source.ensureAlpha().raw().toBuffer(), channels: 4 };
  return { data: await source.removeAlpha().raw().toBuffer(), channels: 3 };
}

/**
 * The last step: `alpha` (one byte per pixel at the image's size) joined to the image's own RGB as
 * an RGBA PNG, never more opaque than the image was (see `lowerAlpha`); an opaque image gets
 * `alpha` as it is, joined by libvips.
 */
export async function cutoutPng(image: RequestImage, alpha: Buffer): Promise<Uint8Array> {
  const { width, height } = image;
  const { data, channels } = await decodeCutoutPixels(image);
  let joined: Sharp;
  if (channels === 3) {
    joined = sharp(data, { raw: { width, height, channels: 3 } }).joinChannel(alpha, {
      raw: { width, height, channels: 1 },
    });
  } else {
    lowerAlpha(data, alpha);
    joined = sharp(data, { raw: { width, height, channels: 4 } });
  }
  const png = await joined.png({ compressionLevel: 6 }).toBuffer();
  return new Uint8Array(png.buffer, png.byteOffset, png.byteLength);
}
