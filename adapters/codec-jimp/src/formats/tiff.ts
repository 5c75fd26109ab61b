import UTIF from "utif2";
import type { Bitmap } from "../bitmap.js";

/**
 * TIFF through `utif2` (the decoder jimp's own TIFF plugin uses): the first page is decoded to
 * RGBA; the output is one uncompressed RGBA page (lossless; utif2 writes no compressed TIFF).
 */
export function decodeTiff(bytes: Uint8Array): Bitmap {
  const buffer = bytes.slice().buffer;
  const [first] = UTIF.decode(buffer);
  if (first === undefined) throw new Error("The TIFF has no image directory.");
  UTIF.decodeImage(buffer, first);
  const rgba = UTIF.toRGBA8(first);
  const width = Number(first.width);
  const height = Number(first.height);
  if (!(width > 0) || !(height > 0) || rgba.byteLength !== width * height * 4) {
    throw new Error("The TIFF's pixel data does not match its size.");
  }
  return { data: Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength), width, height };
}

export function encodeTiff(bitmap: Bitmap): Buffer {
  return Buffer.from(UTIF.encodeImage(new Uint8Array(bitmap.data), bitmap.width, bitmap.height));
}
