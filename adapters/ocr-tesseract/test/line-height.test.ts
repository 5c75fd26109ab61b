import { describe, expect, it } from "vitest";
import { estimateLineHeight, scaleFor, TARGET_LINE_HEIGHT } from "../src/line-height.js";
import { seeded } from "./seeded.js";

/**
 * `estimateLineHeight` as it was before it stepped over paper a word at a time (line-height.ts at
 * 80a32f2), pixel by pixel, verbatim: the scan must give exactly what this gives, on every page.
 */
function referenceEstimateLineHeight(grey: Uint8Array, width: number, height: number): number | undefined {
  const stripWidth = Math.max(64, Math.ceil(width / 8));
  const heights: number[] = [];
  for (let left = 0; left < width; left += stripWidth) {
    const right = Math.min(width, left + stripWidth);
    let start = -1;
    for (let y = 0; y <= height; y += 1) {
      let ink = false;
      if (y < height) {
        const row = y * width;
        for (let x = left; x < right; x += 1) {
          if (grey[row + x]! <= 128) {
            ink = true;
            break;
          }
        }
      }
      if (ink && start === -1) start = y;
      else if (!ink && start !== -1) {
        const run = y - start;
        if (run >= 4 && run <= height / 4) heights.push(run);
        start = -1;
      }
    }
  }
  if (heights.length === 0) return undefined;
  heights.sort((a, b) => a - b);
  return heights[Math.floor(heights.length / 2)];
}

const pick = <T>(random: () => number, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;

/**
 * A page of paper (255) `width` x `height` at `offset` (0-3) into a bigger buffer whose bytes around
 * it are ink (0): a scan that read outside the page would find it, and its words are unaligned to
 * the page's rows.
 */
function blankPage(width: number, height: number, offset = 0): Uint8Array {
  return new Uint8Array(offset + width * height + 7).subarray(offset, offset + width * height).fill(255);
}

/** Text lines `lineHeight` px tall, `gap` px apart, from `left` to `right` of the page, in `value`. */
function drawLines(
  grey: Uint8Array,
  width: number,
  height: number,
  lines: { top: number; lineHeight: number; gap: number; count: number; left: number; right: number },
  value: number,
): void {
  let top = lines.top;
  for (let line = 0; line < lines.count && top + lines.lineHeight <= height; line++) {
    for (let y = top; y < top + lines.lineHeight; y++) {
      // Glyphs: 6 px of ink, 3 px apart (every row of the line has ink in every strip).
      for (let x = lines.left; x < lines.right; x++) if (x % 9 < 6) grey[y * width + x] = value;
    }
    top += lines.lineHeight + lines.gap;
  }
}

describe("estimateLineHeight", () => {
  it("measures the height of text lines, counting ink at or below 128", () => {
    for (const [width, offset] of [
      [640, 0],
      [643, 1],
      [1001, 3],
    ] as const) {
      for (const lineHeight of [4, 13, 27]) {
        for (const value of [0, 127, 128]) {
          const grey = blankPage(width, 480, offset);
          drawLines(
            grey,
            width,
            480,
            { top: 7, lineHeight, gap: 11, count: 10, left: 3, right: width - 2 },
            value,
          );
          expect(estimateLineHeight(grey, width, 480)).toBe(lineHeight);
        }
        // Lines of 129 are not ink.
        const light = blankPage(width, 480, offset);
        drawLines(light, width, 480, { top: 7, lineHeight, gap: 11, count: 10, left: 0, right: width }, 129);
        expect(estimateLineHeight(light, width, 480)).toBeUndefined();
      }
    }
  });

  it("takes the median line, so the body text outweighs a heading, and ignores specks and pictures", () => {
    const grey = blankPage(800, 600);
    drawLines(grey, 800, 600, { top: 10, lineHeight: 40, gap: 10, count: 1, left: 0, right: 800 }, 0);
    drawLines(grey, 800, 600, { top: 80, lineHeight: 16, gap: 8, count: 12, left: 0, right: 800 }, 0);
    // A picture taller than a quarter of the page, and specks (runs under 4 px).
    drawLines(grey, 800, 600, { top: 400, lineHeight: 160, gap: 0, count: 1, left: 100, right: 700 }, 30);
    for (let speck = 0; speck < 50; speck++) grey[(370 + (speck % 3) * 5) * 800 + speck * 15] = 0;
    expect(estimateLineHeight(grey, 800, 600)).toBe(16);
    expect(estimateLineHeight(blankPage(800, 600), 800, 600)).toBeUndefined();
  });

  it("gives what it did on random pages", () => {
    const random = seeded(5);
    const values = [0, 1, 100, 127, 128, 129, 130, 200, 254];
    let measured = 0;
    for (let round = 0; round < 400; round++) {
      const width = pick(random, [1, 3, 5, 7, 9, 17, 63, 64, 65, 127, 129, 257, 333, 511, 513, 640, 1001]);
      const height = 1 + Math.floor(random() * 300);
      const grey = blankPage(width, height, round % 4);
      const background = random();
      // Paper, a photo's mid-grey paper, or paper with light noise.
      if (background > 0.7)
        for (let index = 0; index < grey.length; index++) grey[index] = 129 + Math.floor(random() * 127);
      else if (background > 0.5)
        for (let index = 0; index < grey.length; index++)
          if (random() < 0.05) grey[index] = pick(random, values);
      if (random() < 0.9) {
        for (let block = Math.floor(random() * 4); block >= 0; block--) {
          const left = Math.floor(random() * width);
          const lines = {
            top: Math.floor(random() * height),
            lineHeight: 1 + Math.floor(random() * 40),
            gap: Math.floor(random() * 20),
            count: 1 + Math.floor(random() * 12),
            left,
            right: left + 1 + Math.floor(random() * (width - left)),
          };
          drawLines(grey, width, height, lines, pick(random, values));
        }
      }
      // Specks, at times many, and ink touching the page's edges.
      const specks = random() < 0.3 ? Math.floor(random() * 500) : Math.floor(random() * 5);
      for (let speck = 0; speck < specks; speck++)
        grey[Math.floor(random() * grey.length)] = pick(random, values);
      if (random() < 0.4) {
        for (let y = 0; y < height; y++)
          if (random() < 0.5) grey[y * width + (y % 2 === 0 ? 0 : width - 1)] = 128;
      }
      const expected = referenceEstimateLineHeight(grey, width, height);
      expect(estimateLineHeight(grey, width, height)).toBe(expected);
      if (expected !== undefined) measured++;
    }
    // Most pages have lines to measure.
    expect(measured).toBeGreaterThan(200);
  });

  it("scales to the target line height within 0.4..3", () => {
    expect(scaleFor(TARGET_LINE_HEIGHT)).toBe(1);
    expect(scaleFor(20)).toBe(2);
    expect(scaleFor(5)).toBe(3);
    expect(scaleFor(1000)).toBe(0.4);
  });
});
