import type { Rgba } from "@pixport/core/adapter-kit";

/** jimp's bitmap: RGBA, 8 bits per channel, rows top to bottom, no padding. */
export interface Bitmap {
  data: Buffer;
  width: number;
  height: number;
}

/** A `width` x `height` bitmap filled with `color`. */
export function filledBitmap(width: number, height: number, color: Rgba): Bitmap {
  const data = Buffer.allocUnsafe(width * height * 4);
  const pixel = packed(color);
  new Uint32Array(data.buffer, data.byteOffset, width * height).fill(pixel);
  return { data, width, height };
}

/** The colour as one little-endian RGBA word (to fill Uint32 views). */
export function packed(color: Rgba): number {
  const channel = (value: number) => Math.min(255, Math.max(0, Math.round(value)));
  const alpha = Math.round(Math.min(1, Math.max(0, color.alpha)) * 255);
  return (channel(color.r) | (channel(color.g) << 8) | (channel(color.b) << 16) | (alpha << 24)) >>> 0;
}

/** Whether every pixel has alpha 255. */
export function isOpaque(bitmap: Bitmap): boolean {
  const { data } = bitmap;
  for (let offset = 3; offset < data.length; offset += 4) {
    if (data[offset] !== 255) return false;
  }
  return true;
}

/** Multiplies colour by alpha in place (for filters that mix neighbouring pixels). */
export function premultiply(bitmap: Bitmap): void {
  const { data } = bitmap;
  for (let offset = 0; offset < data.length; offset += 4) {
    const alpha = data[offset + 3]!;
    if (alpha === 255) continue;
    data[offset] = Math.round((data[offset]! * alpha) / 255);
    data[offset + 1] = Math.round((data[offset + 1]! * alpha) / 255);
    data[offset + 2] = Math.round((data[offset + 2]! * alpha) / 255);
  }
}

/** Inverse of {@link premultiply}. */
export function unpremultiply(bitmap: Bitmap): void {
  const { data } = bitmap;
  for (let offset = 0; offset < data.length; offset += 4) {
    const alpha = data[offset + 3]!;
    if (alpha === 255) continue;
    if (alpha === 0) {
      data[offset] = 0;
      data[offset + 1] = 0;
      data[offset + 2] = 0;
      continue;
    }
    data[offset] = Math.min(255, Math.round((data[offset]! * 255) / alpha));
    data[offset + 1] = Math.min(255, Math.round((data[offset + 1]! * 255) / alpha));
    data[offset + 2] = Math.min(255, Math.round((data[offset + 2]! * 255) / alpha));
  }
}

/** The region `[left, left+width) x [top, top+height)` as a new bitmap (the caller keeps it inside). */
export function crop(bitmap: Bitmap, left: number, top: number, width: number, height: number): Bitmap {
  if (left === 0 && top === 0 && width === bitmap.width && height === bitmap.height) return bitmap;
  const data = Buffer.allocUnsafe(width * height * 4);
  const rowBytes = width * 4;
  for (let y = 0; y < height; y += 1) {
    const source = ((top + y) * bitmap.width + left) * 4;
    bitmap.data.copy(data, y * rowBytes, source, source + rowBytes);
  }
  return { data, width, height };
}

/** Mirror: `horizontal` swaps left and right, `vertical` top and bottom, `both` turns 180°. */
export function mirror(bitmap: Bitmap, horizontal: boolean, vertical: boolean): Bitmap {
  const { width, height } = bitmap;
  const source = new Uint32Array(bitmap.data.buffer, bitmap.data.byteOffset, width * height);
  const data = Buffer.allocUnsafe(width * height * 4);
  const target = new Uint32Array(data.buffer, data.byteOffset, width * height);
  for (let y = 0; y < height; y += 1) {
    const from = (vertical ? height - 1 - y : y) * width;
    const to = y * width;
    if (horizontal) {
      for (let x = 0; x < width; x += 1) target[to + x] = source[from + width - 1 - x]!;
    } else {
      target.set(source.subarray(from, from + width), to);
    }
  }
  return { data, width, height };
}

/** Clockwise quarter turns (1, 2 or 3), pixel-exact. */
export function quarterTurn(bitmap: Bitmap, turns: number): Bitmap {
  const quarter = ((turns % 4) + 4) % 4;
  if (quarter === 0) return bitmap;
  if (quarter === 2) return mirror(bitmap, true, true);
  const { width, height } = bitmap;
  const source = new Uint32Array(bitmap.data.buffer, bitmap.data.byteOffset, width * height);
  const data = Buffer.allocUnsafe(width * height * 4);
  const target = new Uint32Array(data.buffer, data.byteOffset, width * height);
  // Output is height x width. Clockwise: output (x, y) comes from input (y, height - 1 - x).
  for (let y = 0; y < width; y += 1) {
    const row = y * height;
    if (quarter === 1) {
      for (let x = 0; x < height; x += 1) target[row + x] = source[(height - 1 - x) * width + y]!;
    } else {
      for (let x = 0; x < height; x += 1) target[row + x] = source[x * width + (width - 1 - y)]!;
    }
  }
  return { data, width: height, height: width };
}

/** Turns a stored image upright according to its EXIF orientation (1..8). */
export function applyOrientation(bitmap: Bitmap, orientation: number): Bitmap {
  switch (orientation) {
    case 2:
      return mirror(bitmap, true, false);
    case 3:
      return quarterTurn(bitmap, 2);
    case 4:
      return mirror(bitmap, false, true);
    case 5:
      return mirror(quarterTurn(bitmap, 1), true, false);
    case 6:
      return quarterTurn(bitmap, 1);
    case 7:
      return mirror(quarterTurn(bitmap, 3), true, false);
    case 8:
      return quarterTurn(bitmap, 3);
    default:
      return bitmap;
  }
}

/** Composites the bitmap over an opaque colour (alpha becomes 255), in place. */
export function flatten(bitmap: Bitmap, background: Rgba): void {
  const { data } = bitmap;
  const r = Math.round(background.r);
  const g = Math.round(background.g);
  const b = Math.round(background.b);
  for (let offset = 0; offset < data.length; offset += 4) {
    const alpha = data[offset + 3]!;
    if (alpha === 255) continue;
    const inverse = 255 - alpha;
    data[offset] = Math.round((data[offset]! * alpha + r * inverse) / 255);
    data[offset + 1] = Math.round((data[offset + 1]! * alpha + g * inverse) / 255);
    data[offset + 2] = Math.round((data[offset + 2]! * alpha + b * inverse) / 255);
    data[offset + 3] = 255;
  }
}
