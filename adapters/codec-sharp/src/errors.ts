import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";
import { FORMAT_LIST, invalidImage } from "@pixport/core/adapter-kit";

/**
 * Wraps caller bytes as a Buffer without copying. Anything but a `Uint8Array` is refused: sharp
 * reads a string as a file path, so passing one through would be a local-file-read primitive.
 */
export function asBuffer(input: unknown, name: string): Buffer {
  if (!(input instanceof Uint8Array)) {
    const received =
      input === null ? "null" : typeof input === "object" ? input.constructor?.name : typeof input;
    throw new TypeError(`Expected Uint8Array for ${name}, received ${received}`);
  }
  return Buffer.isBuffer(input) ? input : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
}

/**
 * Translates a failure inside a sharp pipeline. sharp reports decode problems (corrupt or truncated
 * data, which `failOn: "warning"` turns into errors) as plain `Error`s; the only one with its own
 * code is libvips' pixel cap. Our own errors and `TypeError`s pass through unchanged.
 */
export function translateSharpError(error: unknown): unknown {
  if (isImagePipelineError(error) || error instanceof TypeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/exceeds pixel limit/i.test(message)) {
    return new ImagePipelineError(
      ErrorCodes.IMAGE_TOO_LARGE,
      "The image exceeds the decoder's pixel limit (limits.maxInputPixels).",
      { cause: error },
    );
  }
  return invalidImage(`The image could not be decoded as ${FORMAT_LIST}: ${firstLine(message)}`, error);
}

function firstLine(message: string): string {
  return message.split("\n", 1)[0]?.trim() || "unknown decoder error";
}
