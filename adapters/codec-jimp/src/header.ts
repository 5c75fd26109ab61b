import type { ImageFormat } from "@pixport/core";
import { readImageHeader, type StoredHeader } from "@pixport/core/adapter-kit";

/** A header as the jimp codec reads it: what it declares, and why jimp cannot decode it. */
export interface JimpHeader extends StoredHeader {
  /**
   * Why the jimp codec cannot decode this (well-formed) file, e.g. an arithmetic-coded JPEG or an
   * animated WebP; `undefined` when it can.
   */
  unsupported?: string;
}

/** Reads the header of `bytes` (`null`: not a well-formed `format` header). */
export function readHeader(bytes: Uint8Array, format: ImageFormat): JimpHeader | null {
  const header = readImageHeader(bytes, format);
  if (header === null) return null;
  const unsupported = unsupportedBy(header);
  return unsupported === undefined ? header : { ...header, unsupported };
}

function unsupportedBy(header: StoredHeader): string | undefined {
  if (header.animated) return "The jimp codec cannot decode animated WebP images.";
  const frame = header.jpegFrame;
  if (frame === undefined) return undefined;
  // jpeg-js decodes baseline and progressive Huffman-coded 8-bit JPEGs only.
  if (frame.marker !== 0xc0 && frame.marker !== 0xc1 && frame.marker !== 0xc2) {
    return `The jimp codec cannot decode this JPEG variant (SOF${frame.marker - 0xc0}: lossless, hierarchical or arithmetic-coded).`;
  }
  if (frame.precision !== 8) return `The jimp codec cannot decode ${frame.precision}-bit JPEGs (only 8-bit).`;
  return undefined;
}
