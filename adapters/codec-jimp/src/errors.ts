import { isImagePipelineError } from "@pixport/core";
import { invalidImage } from "@pixport/core/adapter-kit";

/**
 * Wraps caller bytes as a Buffer without copying. Anything but a `Uint8Array` is refused: jimp's
 * `read()` takes a string as a file path or URL, so a string must never get near it.
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
 * Translates a failure inside a decoder (jpeg-js, pngjs, libwebp) into `INVALID_IMAGE`; our own
 * errors and `TypeError`s pass through unchanged.
 */
export function translateDecodeError(error: unknown, what: string): unknown {
  if (isImagePipelineError(error) || error instanceof TypeError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split("\n", 1)[0]?.trim() || "unknown decoder error";
  return invalidImage(`${what} could not be decoded: ${first}`, error);
}
