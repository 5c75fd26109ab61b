import type { ImageFormat } from "./image.js";

/**
 * What the header of an image file declares, read without decoding any pixel: enough to refuse a
 * decompression bomb before a decoder allocates its canvas (libwebp's header read alone fills a
 * 16383 x 16383 canvas on allocators whose calloc touches its pages), and for a codec to tell
 * what it cannot decode.
 */
export interface StoredHeader {
  format: ImageFormat;
  /** Stored width and height (before EXIF orientation). */
  width: number;
  height: number;
  /** EXIF orientation 1..8 (1 when absent or unreadable). */
  orientation: number;
  /** Frames of an animation or pages of a TIFF (absent: 1). */
  frames?: number;
  /** JPEG: the frame header's marker (`0xc0`..`0xcf`) and sample precision in bits. */
  jpegFrame?: { marker: number; precision: number };
  /** WebP: the extended header's animation flag is set. */
  animated?: boolean;
}

/** Longest stretch of a file scanned for header segments (EXIF and SOF come first in practice). */
const MAX_SCAN_BYTES = 16 * 1024 * 1024;

/**
 * Reads format, stored size, frames and EXIF orientation from the header of `bytes`. Returns `null`
 * when the bytes are not a well-formed header of `format`. Cost: a walk over segment/chunk headers,
 * never proportional to the pixel count.
 */
export function readImageHeader(bytes: Uint8Array, format: ImageFormat): StoredHeader | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  try {
    switch (format) {
      case "jpeg":
        return readJpegHeader(bytes, view);
      case "png":
        return readPngHeader(bytes, view);
      case "webp":
        return readWebpHeader(bytes, view);
      case "gif":
        return readGifHeader(bytes, view);
      case "tiff":
        return readTiffHeader(bytes, view);
      case "avif":
        return readAvifHeader(bytes, view);
    }
  } catch {
    // A read past the end of a crafted header: not a well-formed image.
    return null;
  }
}

function ascii(bytes: Uint8Array, start: number, length: number): string {
  let text = "";
  for (let index = start; index < start + length && index < bytes.length; index += 1) {
    text += String.fromCharCode(bytes[index]!);
  }
  return text;
}

function readJpegHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  let offset = 2;
  let orientation = 1;
  const limit = Math.min(bytes.length, MAX_SCAN_BYTES);
  while (offset + 4 <= limit) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      // Fill bytes before a marker.
      offset += 1;
      continue;
    }
    // Standalone markers carry no length.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // EOI or scan data before any frame header
    const length = view.getUint16(offset + 2);
    if (length < 2 || offset + 2 + length > bytes.length) return null;
    const body = offset + 4;
    if (marker === 0xe1 && ascii(bytes, body, 6) === "Exif\0\0") {
      orientation = tiffOrientation(view, body + 6, offset + 2 + length);
    }
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (length < 8) return null;
      const precision = bytes[body]!;
      const height = view.getUint16(body + 1);
      const width = view.getUint16(body + 3);
      if (width === 0 || height === 0) return null;
      // EXIF (APP1) precedes the frame header in every real file; a later one would be ignored.
      return { format: "jpeg", width, height, orientation, jpegFrame: { marker, precision } };
    }
    offset += 2 + length;
  }
  return null;
}

function readPngHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  if (bytes.length < 33 || ascii(bytes, 12, 4) !== "IHDR" || view.getUint32(8) !== 13) return null;
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return null;
  let orientation = 1;
  // Chunks before the first IDAT: eXIf (orientation) and acTL (APNG) sit there.
  let offset = 33;
  const limit = Math.min(bytes.length, MAX_SCAN_BYTES);
  while (offset + 8 <= limit) {
    const length = view.getUint32(offset);
    const type = ascii(bytes, offset + 4, 4);
    if (type === "IDAT" || type === "IEND") break;
    if (offset + 12 + length > bytes.length) return null;
    if (type === "eXIf") orientation = tiffOrientation(view, offset + 8, offset + 8 + length);
    offset += 12 + length;
  }
  return { format: "png", width, height, orientation };
}

function readWebpHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  // The RIFF size covers the whole file: fewer bytes than it announces is a truncated file.
  if (bytes.length < 30 || view.getUint32(4, true) + 8 > bytes.length) return null;
  let offset = 12;
  let width = 0;
  let height = 0;
  let orientation = 1;
  let animated = false;
  let extended = false;
  let frames = 0;
  const limit = Math.min(bytes.length, MAX_SCAN_BYTES);
  while (offset + 8 <= limit) {
    const type = ascii(bytes, offset, 4);
    const length = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (body + length > bytes.length) return null;
    if (type === "VP8X") {
      if (length < 10) return null;
      extended = true;
      const flags = bytes[body]!;
      animated = (flags & 0x02) !== 0;
      width = 1 + (bytes[body + 4]! | (bytes[body + 5]! << 8) | (bytes[body + 6]! << 16));
      height = 1 + (bytes[body + 7]! | (bytes[body + 8]! << 8) | (bytes[body + 9]! << 16));
    } else if (type === "VP8 " && !extended) {
      if (length < 10 || bytes[body + 3] !== 0x9d || bytes[body + 4] !== 0x01 || bytes[body + 5] !== 0x2a) {
        return null;
      }
      width = view.getUint16(body + 6, true) & 0x3fff;
      height = view.getUint16(body + 8, true) & 0x3fff;
      return width > 0 && height > 0 ? { format: "webp", width, height, orientation } : null;
    } else if (type === "VP8L" && !extended) {
      if (length < 5 || bytes[body] !== 0x2f) return null;
      const bits = view.getUint32(body + 1, true);
      width = 1 + (bits & 0x3fff);
      height = 1 + ((bits >>> 14) & 0x3fff);
      return { format: "webp", width, height, orientation };
    } else if (type === "ANMF" && extended) {
      frames += 1;
    } else if (type === "EXIF" && extended) {
      if (body + length > bytes.length) return null;
      // The chunk holds TIFF data; some writers (libvips among them) keep JPEG's "Exif\0\0" prefix.
      const start = ascii(bytes, body, 6) === "Exif\0\0" ? body + 6 : body;
      orientation = tiffOrientation(view, start, body + length);
    }
    // Chunks are padded to an even length.
    offset = body + length + (length & 1);
  }
  return extended && width > 0 && height > 0
    ? {
        format: "webp",
        width,
        height,
        orientation,
        ...(frames > 1 ? { frames } : {}),
        ...(animated ? { animated } : {}),
      }
    : null;
}

/** The Orientation tag (0x0112) of IFD0 of a TIFF structure in `[start, end)`; 1 when absent or bad. */
function tiffOrientation(view: DataView, start: number, end: number): number {
  try {
    if (end - start < 8) return 1;
    const order = view.getUint16(start);
    if (order !== 0x4949 && order !== 0x4d4d) return 1;
    const little = order === 0x4949;
    const ifd = start + view.getUint32(start + 4, little);
    if (ifd + 2 > end) return 1;
    const count = view.getUint16(ifd, little);
    for (let index = 0; index < count; index += 1) {
      const entry = ifd + 2 + index * 12;
      if (entry + 12 > end) return 1;
      if (view.getUint16(entry, little) === 0x0112) {
        const value = view.getUint16(entry + 8, little);
        return value >= 1 && value <= 8 ? value : 1;
      }
    }
    return 1;
  } catch {
    return 1;
  }
}

/**
 * GIF: the logical screen size, and the frames counted by walking the blocks (extension and image
 * data sub-blocks are skipped by their lengths, never decoded).
 */
function readGifHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  if (bytes.length < 13) return null;
  const width = view.getUint16(6, true);
  const height = view.getUint16(8, true);
  if (width === 0 || height === 0) return null;
  const packed = bytes[10]!;
  let offset = 13 + (packed & 0x80 ? 3 * 2 ** ((packed & 7) + 1) : 0);
  let frames = 0;
  const skipSubBlocks = (start: number): number => {
    let position = start;
    while (position < bytes.length) {
      const size = bytes[position]!;
      position += 1 + size;
      if (size === 0) return position;
    }
    return -1;
  };
  while (offset < bytes.length) {
    const block = bytes[offset]!;
    if (block === 0x3b) break;
    if (block === 0x21) {
      offset = skipSubBlocks(offset + 2);
    } else if (block === 0x2c) {
      if (offset + 10 > bytes.length) return null;
      const local = bytes[offset + 9]!;
      offset += 10 + (local & 0x80 ? 3 * 2 ** ((local & 7) + 1) : 0) + 1;
      offset = skipSubBlocks(offset);
      frames += 1;
    } else {
      return null;
    }
    if (offset < 0) return null;
  }
  if (frames === 0) return null;
  return { format: "gif", width, height, orientation: 1, ...(frames > 1 ? { frames } : {}) };
}

/** Most TIFF directories followed (a loop of IFD offsets is cut here). */
const MAX_TIFF_PAGES = 100_000;

/** TIFF: size and orientation from the first directory, pages counted along the IFD chain. */
function readTiffHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  if (bytes.length < 8) return null;
  const little = bytes[0] === 0x49;
  let ifd = view.getUint32(4, little);
  let width = 0;
  let height = 0;
  let orientation = 1;
  let pages = 0;
  const seen = new Set<number>();
  while (ifd !== 0 && pages < MAX_TIFF_PAGES) {
    if (seen.has(ifd) || ifd + 2 > bytes.length)
      return pages === 0 ? null : { format: "tiff", width, height, orientation, frames: pages };
    seen.add(ifd);
    const count = view.getUint16(ifd, little);
    if (ifd + 2 + count * 12 + 4 > bytes.length) return null;
    if (pages === 0) {
      for (let index = 0; index < count; index += 1) {
        const entry = ifd + 2 + index * 12;
        const tag = view.getUint16(entry, little);
        const type = view.getUint16(entry + 2, little);
        const value = type === 3 ? view.getUint16(entry + 8, little) : view.getUint32(entry + 8, little);
        if (tag === 256) width = value;
        else if (tag === 257) height = value;
        else if (tag === 274 && value >= 1 && value <= 8) orientation = value;
      }
    }
    pages += 1;
    ifd = view.getUint32(ifd + 2 + count * 12, little);
  }
  if (width === 0 || height === 0) return null;
  return { format: "tiff", width, height, orientation, ...(pages > 1 ? { frames: pages } : {}) };
}

/** AVIF: the largest `ispe` (image spatial extents) property of the `meta` box. */
function readAvifHeader(bytes: Uint8Array, view: DataView): StoredHeader | null {
  let width = 0;
  let height = 0;
  const walk = (start: number, end: number, depth: number): void => {
    let offset = start;
    while (offset + 8 <= end && depth < 6) {
      let size = view.getUint32(offset);
      const type = ascii(bytes, offset + 4, 4);
      if (size === 0) size = end - offset;
      if (size < 8 || offset + size > end) return;
      if (type === "meta") walk(offset + 12, offset + size, depth + 1);
      else if (type === "iprp" || type === "ipco") walk(offset + 8, offset + size, depth + 1);
      else if (type === "ispe" && size >= 20) {
        const w = view.getUint32(offset + 12);
        const h = view.getUint32(offset + 16);
        if (w * h > width * height) {
          width = w;
          height = h;
        }
      }
      offset += size;
    }
  };
  walk(0, Math.min(bytes.length, MAX_SCAN_BYTES), 0);
  return width > 0 && height > 0 ? { format: "avif", width, height, orientation: 1 } : null;
}
