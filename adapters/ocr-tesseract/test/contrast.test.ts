import { describe, expect, it } from "vitest";
import { stretchContrast } from "../src/contrast.js";

/** A page of `total` pixels holding `count` pixels of each given grey level, the rest `fill`. */
function page(total: number, fill: number, levels: [level: number, count: number][]): Uint8Array {
  const grey = new Uint8Array(total).fill(fill);
  let at = 0;
  for (const [level, count] of levels) {
    grey.fill(level, at, at + count);
    at += count;
  }
  return grey;
}

describe("stretchContrast", () => {
  it("maps the lower percentile's level to black and the upper one's to white, linearly between", () => {
    // 10,000 px: 50 at 10 (0.5 %), 250 at 50 (3 % cumulative), 9,700 at 200. With 2 % / 99 %, the
    // black point is 50 (10 holds only 0.5 %) and the white point 200.
    const grey = page(10_000, 200, [
      [10, 50],
      [50, 250],
      [125, 1],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0); // 10, below the black point: clipped
    expect(grey[50]).toBe(0); // 50
    expect(grey[300]).toBe(128); // 125: (125 - 50) * 255 / 150 = 127.5
    expect(grey[9_999]).toBe(255); // 200
  });

  it("keeps a light tone that covers part of the page light, where the lower percentile falls on it", () => {
    // 10,000 px: 150 of ink at 0 (1.5 %), 2,000 of a striped table's grey band at 228, the rest
    // paper at 255. The 2 % point is 228: by percentiles alone the band, text and all, went black.
    // The black point comes down to where 228 stays 3/4 of the way to white: (228 - 0.75 * 255) /
    // 0.25 = 147, so the band becomes (228 - 147) * 255 / 108 = 191.
    const grey = page(10_000, 255, [
      [0, 150],
      [228, 2_000],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0);
    expect(grey[150]).toBe(191);
    expect(grey[9_999]).toBe(255);
    // Under 1 % of the page, a light level is not a tone: the percentile's black point stands.
    // (1.5 % at 0 and 0.4 % at 200 put the 2 % point on 228, which holds 0.9 %.)
    const sparse = page(10_000, 255, [
      [0, 150],
      [200, 40],
      [228, 90],
    ]);
    stretchContrast(sparse, 0.02, 0.99);
    expect(sparse[150]).toBe(0); // 200, below the black point 228
    expect(sparse[200]).toBe(0); // 228, the black point
  });

  it("counts every pixel, the last ones of a page whose size is not a multiple of four too", () => {
    // 103 px: 100 at 200, then 3 at 10 (2.9 %): the black point is 10 only if the last 3 count.
    const grey = new Uint8Array(103).fill(200);
    grey.fill(10, 100);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[102]).toBe(0);
    expect(grey[0]).toBe(255);
  });

  it("leaves a page alone whose percentiles are at most two levels apart", () => {
    const flat = page(1_000, 128, [[127, 500]]);
    const before = Uint8Array.from(flat);
    stretchContrast(flat, 0.02, 0.99);
    expect(flat).toEqual(before);
  });

  it("keeps a page that already spans black to white as it is", () => {
    const grey = page(1_000, 255, [
      [0, 100],
      [77, 10],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0);
    expect(grey[105]).toBe(77);
    expect(grey[999]).toBe(255);
  });
});
