import { decode as decodeBlurhash } from "blurhash";
import { thumbHashToRGBA } from "thumbhash";
import { describe, expect, it } from "vitest";
import { createThumbhashPlaceholders } from "../src/index.js";

/** 80x40 RGBA: the left half red, the right half blue at half opacity. */
function halves(): { width: number; height: number; data: Uint8Array } {
  const width = 80;
  const height = 40;
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      data.set(x < 40 ? [255, 0, 0, 255] : [0, 0, 255, 128], (y * width + x) * 4);
    }
  }
  return { width, height, data };
}

/** Mean RGBA of columns [from, to) of an RGBA image. */
function meanColumns(data: ArrayLike<number>, width: number, height: number, from: number, to: number) {
  const sums = [0, 0, 0, 0];
  for (let y = 0; y < height; y += 1) {
    for (let x = from; x < to; x += 1) {
      for (let channel = 0; channel < 4; channel += 1) sums[channel]! += data[(y * width + x) * 4 + channel]!;
    }
  }
  return sums.map((sum) => sum / ((to - from) * height));
}

describe("createThumbhashPlaceholders", () => {
  const placeholders = createThumbhashPlaceholders();

  it("encodes a ThumbHash that the package's decoder turns back into the picture, alpha included", () => {
    const hash = placeholders.thumbhash(halves());
    const decoded = thumbHashToRGBA(Buffer.from(hash, "base64"));
    // ThumbHash keeps the aspect ratio in the hash.
    expect(decoded.w / decoded.h).toBeCloseTo(2, 0);
    const left = meanColumns(decoded.rgba, decoded.w, decoded.h, 0, Math.floor(decoded.w / 3));
    const right = meanColumns(decoded.rgba, decoded.w, decoded.h, Math.ceil((decoded.w * 2) / 3), decoded.w);
    expect(left[0]).toBeGreaterThan(150);
    expect(left[2]).toBeLessThan(100);
    expect(right[2]).toBeGreaterThan(left[2]!);
    expect(right[3]).toBeLessThan(left[3]!);
    expect(placeholders.thumbhash(halves()), "deterministic").toBe(hash);
  });

  it("encodes a 4x3 BlurHash that decodes red on the left, blue on the right", () => {
    const hash = placeholders.blurhash!(halves());
    expect(hash).toHaveLength(28);
    const pixels = decodeBlurhash(hash, 32, 16);
    const left = meanColumns(pixels, 32, 16, 0, 8);
    const right = meanColumns(pixels, 32, 16, 24, 32);
    expect(left[0]).toBeGreaterThan(right[0]!);
    expect(right[2]).toBeGreaterThan(left[2]!);
  });

  it("refuses samples over 100 x 100 and data of the wrong length", () => {
    expect(() =>
      placeholders.thumbhash({ width: 101, height: 10, data: new Uint8Array(101 * 10 * 4) }),
    ).toThrow(RangeError);
    expect(() => placeholders.thumbhash({ width: 10, height: 10, data: new Uint8Array(10) })).toThrow(
      /Expected 400 RGBA bytes, received 10/,
    );
  });
});
