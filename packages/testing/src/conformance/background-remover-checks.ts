/** Decoding and checking helpers of the BackgroundRemover suite. */
import { sniffImageFormat } from "@pixport/core";
import sharp from "sharp";
import { expect } from "vitest";

export const TRANSPARENT_MAX = 8;
/** Subject pixels this many px (city block) from the mask edge take part in the colour check. */
export const COLOUR_CHECK_DEPTH = 4;

export interface DecodedCutout {
  /** RGBA, 4 bytes per pixel. */
  data: Uint8Array;
  width: number;
  height: number;
}

export async function decodeRgba(bytes: Uint8Array): Promise<DecodedCutout> {
  const { data, info } = await sharp(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    .ensureAlpha()
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

export async function decodeRgb(bytes: Uint8Array): Promise<Uint8Array> {
  return sharp(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    .removeAlpha()
    .toColourspace("srgb")
    .raw({ depth: "uchar" })
    .toBuffer();
}

/**
 * Asserts the port's output format: PNG magic bytes, an IHDR of colour type 6 (truecolour with
 * alpha), and exactly `width` x `height` px, both in the header and once decoded.
 */
export async function expectRgbaPng(output: unknown, width: number, height: number): Promise<DecodedCutout> {
  expect(output, "remove() resolves bytes").toBeInstanceOf(Uint8Array);
  const bytes = output as Uint8Array;
  expect(sniffImageFormat(bytes), "magic bytes of the result").toBe("png");
  expect(bytes.length, "a PNG header").toBeGreaterThanOrEqual(33);
  const header = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  expect(String.fromCharCode(...bytes.subarray(12, 16)), "first chunk").toBe("IHDR");
  expect({ width: header.getUint32(16), height: header.getUint32(20) }, "PNG header size").toEqual({
    width,
    height,
  });
  expect(bytes[25], "PNG colour type (6 = RGBA)").toBe(6);
  const decoded = await decodeRgba(bytes);
  expect({ width: decoded.width, height: decoded.height }, "decoded size").toEqual({ width, height });
  return decoded;
}

/** Rejection of `promise` (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected remove() to reject, but it resolved");
    },
    (error: unknown) => error,
  );
}

/** Subject pixels at least `depth` px (city block) from the background and from the image border. */
export function deepSubject(mask: Uint8Array, width: number, height: number, depth: number): Uint8Array {
  let current = mask;
  for (let step = 0; step < depth; step += 1) {
    const next = new Uint8Array(current.length);
    for (let y = 1; y < height - 1; y += 1) {
      for (let x = 1; x < width - 1; x += 1) {
        const index = y * width + x;
        next[index] =
          current[index] === 1 &&
          current[index - 1] === 1 &&
          current[index + 1] === 1 &&
          current[index - width] === 1 &&
          current[index + width] === 1
            ? 1
            : 0;
      }
    }
    current = next;
  }
  return current;
}
