import { ErrorCodes, ImagePipelineError } from "./errors.js";

/**
 * `INVALID_IMAGE` with a message that names the input: the bytes are not a readable image of a
 * format the codec reads (corrupt, truncated, or not an image at all). The core turns it into a 422
 * on the field the bytes came from.
 *
 * @example
 * ```ts
 * throw invalidImage("The overlay could not be decoded: bad Huffman table", error);
 * ```
 */
export function invalidImage(message: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.INVALID_IMAGE, message, cause === undefined ? {} : { cause });
}

/**
 * `UNSUPPORTED_OPERATION`: the input and request are valid, but this codec cannot do it (a format
 * it cannot write, an animation it cannot keep). Prefer declaring the gap in `capabilities`, which
 * the core checks first; this is for what capabilities cannot express.
 */
export function unsupportedOperation(message: string): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.UNSUPPORTED_OPERATION, message);
}

/**
 * `IMAGE_TOO_LARGE` for an input of `width` x `height` over `limit` pixels, raised from the header,
 * before anything is decoded (a decompression bomb costs a header read).
 */
export function imageTooLarge(
  what: string,
  width: number,
  height: number,
  limit: number,
): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.IMAGE_TOO_LARGE,
    `${what} is ${width} x ${height} pixels, over the decoder's limit of ${limit} pixels (limits.maxInputPixels).`,
  );
}
