import { ErrorCodes, ImagePipelineError } from "./errors.js";
import type { BackgroundRemovalRequest } from "./ports/background-remover.js";

/**
 * The rules every {@link BackgroundRemover} shares around its own segmentation, whatever library
 * decodes and encodes the pixels: what an undecodable request is, how its size is checked against
 * the core's record, and how a mask becomes the cut-out's alpha; and, for removers on sharp, the
 * opening and the final join, written against the few sharp calls they make ({@link SharpLike}:
 * the core imports no image library, the adapter passes its own `sharp`).
 */

/**
 * The image's own pixels a cut-out's mask is joined to, decoded by the remover: sRGB, 3 channels
 * for an opaque image, 4 (RGBA) where it has alpha, row after row.
 */
export interface CutoutPixels {
  data: Uint8Array;
  channels: 3 | 4;
}

/**
 * The error of a removal request whose bytes the remover's decoder refuses: `INVALID_IMAGE`
 * (the client's bytes, so a 4xx, never a 500), with the decoder's message and the error as cause.
 *
 * @example
 * ```ts
 * const meta = await sharp(request.image).metadata().catch((error) => {
 *   throw undecodableRemovalImage(error);
 * });
 * ```
 */
export function undecodableRemovalImage(error: unknown): ImagePipelineError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ImagePipelineError(ErrorCodes.INVALID_IMAGE, `The image cannot be decoded: ${reason}`, {
    cause: error,
  });
}

/**
 * Checks the size a remover decoded (EXIF-oriented, as displayed) against the size the core
 * recorded for the request's image. A mismatch means the bytes are not what the core stored, a
 * server fault: throws `INTERNAL`.
 *
 * @throws ImagePipelineError `INTERNAL` when `decoded` differs from `request`'s width or height.
 */
export function checkRemovalImageSize(
  request: BackgroundRemovalRequest,
  decoded: { width: number; height: number },
): void {
  if (decoded.width !== request.width || decoded.height !== request.height) {
    throw new ImagePipelineError(
      ErrorCodes.INTERNAL,
      `The image is ${decoded.width} x ${decoded.height}, expected ${request.width} x ${request.height}.`,
    );
  }
}

/**
 * Joins a mask to an image that already has alpha, in place: each pixel's alpha in `rgba` (4
 * bytes a pixel) becomes the lower of its own and the mask's (`alpha`, 1 byte a pixel, 255 =
 * subject), so a cut-out is never more opaque than its original. An opaque image (3 channels)
 * takes the mask as its alpha as it is, which the remover's image library joins as a channel.
 */
export function lowerAlpha(rgba: Uint8Array, alpha: Uint8Array): void {
  for (let pixel = 0; pixel < alpha.length; pixel += 1) {
    const at = pixel * 4 + 3;
    rgba[at] = Math.min(rgba[at]!, alpha[pixel]!);
  }
}

/** The metadata fields of sharp's `metadata()` the helpers read. */
export interface SharpLikeMetadata {
  width: number;
  height: number;
  hasAlpha?: boolean;
  /** The size as displayed, EXIF orientation applied. */
  autoOrient?: { width: number; height: number };
}

/** The calls of a sharp pipeline the cut-out helpers make (`sharp.Sharp` has them). */
export interface SharpLikePipeline {
  metadata(): Promise<SharpLikeMetadata>;
  toColourspace(colourspace: "srgb"): SharpLikePipeline;
  ensureAlpha(): SharpLikePipeline;
  removeAlpha(): SharpLikePipeline;
  raw(): SharpLikePipeline;
  /** `images`: one channel's bytes (a Uint8Array here); sharp's own type names Node's Buffer. */
  joinChannel(
    images: Uint8Array | ArrayLike<unknown> | string,
    options: { raw: RawPixels },
  ): SharpLikePipeline;
  png(options: { compressionLevel: number }): SharpLikePipeline;
  toBuffer(): Promise<Uint8Array>;
}

/** Raw pixels' layout, as sharp's `raw` input option takes it. */
export interface RawPixels {
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

/**
 * The sharp constructor as the helpers call it: pass the `sharp` function itself. `Pipeline` is
 * what it returns (`sharp.Sharp`), so {@link RemovalImage.source} keeps every sharp method.
 */
export type SharpLike<Pipeline extends SharpLikePipeline> = (
  input: Uint8Array,
  options: { limitInputPixels?: number; failOn?: "error"; autoOrient?: boolean; raw?: RawPixels },
) => Pipeline;

/** A {@link BackgroundRemovalRequest}'s image, opened and checked (see {@link openRemovalImage}). */
export interface RemovalImage<Pipeline extends SharpLikePipeline> {
  /** A fresh pipeline over the bytes, EXIF-oriented, with the decoder's pixel limit. */
  source(): Pipeline;
  /** Displayed (EXIF-oriented) size, equal to the request's. */
  width: number;
  height: number;
  hasAlpha: boolean;
  /** The constructor it was opened with, for the cut-out's join. */
  sharp: SharpLike<Pipeline>;
}

/**
 * A remover's first step: reads the header of the request's bytes with `sharp` (undecodable:
 * `INVALID_IMAGE`, see {@link undecodableRemovalImage}) and checks the EXIF-oriented size against
 * the size the core recorded ({@link checkRemovalImageSize}).
 *
 * @example
 * ```ts
 * import sharp from "sharp";
 * const image = await openRemovalImage(sharp, request, 100_000_000);
 * const small = await image.source().resize(320, 320).raw().toBuffer();
 * ```
 */
export async function openRemovalImage<Pipeline extends SharpLikePipeline>(
  sharp: SharpLike<Pipeline>,
  request: BackgroundRemovalRequest,
  maxInputPixels: number,
): Promise<RemovalImage<Pipeline>> {
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
  return { source, width, height, hasAlpha: meta.hasAlpha === true, sharp };
}

/**
 * Decodes the pixels {@link cutoutPng} joins the mask to: sRGB, with alpha only where the image
 * has alpha. A remover may start it while its model runs and hand the promise to `cutoutPng`.
 */
export async function decodeCutoutPixels(image: RemovalImage<SharpLikePipeline>): Promise<CutoutPixels> {
  const source = image.source().toColourspace("srgb");
  if (image.hasAlpha) return { data: await source.ensureAlpha().raw().toBuffer(), channels: 4 };
  return { data: await source.removeAlpha().raw().toBuffer(), channels: 3 };
}

/**
 * A remover's last step: `alpha` (one byte a pixel at the image's size, 255 = subject) joined to
 * the image's own pixels (`pixels`, by default decoded now) as an RGBA PNG, never more opaque than
 * the image was ({@link lowerAlpha}); an opaque image takes `alpha` as it is, joined by sharp.
 */
export async function cutoutPng(
  image: RemovalImage<SharpLikePipeline>,
  alpha: Uint8Array,
  pixels: Promise<CutoutPixels> = decodeCutoutPixels(image),
): Promise<Uint8Array> {
  const { width, height, sharp } = image;
  const { data, channels } = await pixels;
  let joined: SharpLikePipeline;
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
