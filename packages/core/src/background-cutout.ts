import { ErrorCodes, ImagePipelineError } from "./errors.js";
import type { BackgroundRemovalRequest } from "./ports/background-remover.js";

/**
 * The rules every {@link BackgroundRemover} shares around its own segmentation, whatever library
 * decodes and encodes the pixels: what an undecodable request is, how its size is checked against
 * the core's record, and how a mask becomes the cut-out's alpha. The image library's calls stay in
 * each adapter; these are the parts without one.
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
