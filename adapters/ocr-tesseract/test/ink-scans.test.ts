import { describe, expect, it } from "vitest";
import { inkBounds, paperWords, skipPaper, unreadInk } from "../src/ink.js";
import type { OcrBox } from "../src/layout.js";
import {
  inBuffer,
  pick,
  randomPage,
  referenceInkBounds,
  referenceUnreadInk,
  WIDTHS,
} from "./ink-reference.js";
import { seeded } from "./seeded.js";

describe("skipPaper", () => {
  it("steps over words only of pixels at or above the limit, and, for limits of 128 to 255, over all of them", () => {
    const random = seeded(11);
    for (const limit of [-3, 0, 1, 60, 127, 127.5, 128, 129, 130, 200, 254, 254.5, 255, 256, Number.NaN]) {
      const near = [0, 127, 128, 129, 255, limit - 1, limit, limit + 1].filter(
        (value) => value >= 0 && value <= 255,
      );
      for (let round = 0; round < 40; round++) {
        const length = 1 + Math.floor(random() * 120);
        const grey = inBuffer(length, Math.floor(random() * 4));
        // Mostly paper, so that long stretches of it are stepped over.
        for (let index = 0; index < length; index++) grey[index] = random() < 0.9 ? 255 : pick(random, near);
        const paper = paperWords(grey, limit);
        const isPaper = (index: number) => grey[index]! >= limit;
        for (let from = 0; from < length; from++) {
          const to = from + Math.floor(random() * (length - from + 1));
          const at = skipPaper(paper, from, to);
          expect(at).toBeGreaterThanOrEqual(from);
          for (let index = from; index < Math.min(at, to); index++) expect(isPaper(index)).toBe(true);
          if (at > from) expect(at).toBeLessThanOrEqual(to);
          // A stop at a whole word before `to` (not at `from` itself) is a word with a pixel below
          // the limit when the test is exact.
          if (at > from && at + 4 <= to && limit >= 128 && limit <= 255) {
            expect([0, 1, 2, 3].some((step) => !isPaper(at + step))).toBe(true);
          }
        }
      }
    }
  });
});

describe("inkBounds and unreadInk against their pixel-by-pixel versions", () => {
  it("inkBounds gives what it did on random pages, at every threshold and margin", () => {
    const random = seeded(1);
    let found = 0;
    for (let round = 0; round < 400; round++) {
      const width = pick(random, WIDTHS);
      const height = 1 + Math.floor(random() * 90);
      const { grey } = randomPage(random, width, height, round % 4);
      const margin = Math.floor(random() * 20);
      expect(inkBounds(grey, width, height, margin)).toEqual(referenceInkBounds(grey, width, height, margin));
      for (const threshold of [
        -5,
        0,
        1,
        60,
        127,
        127.5,
        128,
        129,
        130,
        200,
        254,
        255,
        256,
        1000,
        Number.NaN,
      ]) {
        const expected = referenceInkBounds(grey, width, height, margin, threshold);
        expect(inkBounds(grey, width, height, margin, threshold)).toEqual(expected);
        if (expected !== undefined) found++;
      }
    }
    // Most of them found ink (and not only at thresholds that make every pixel ink).
    expect(found).toBeGreaterThan(400 * 15 * 0.5);
  });

  it("inkBounds gives what it did at 127, 128 and 129, alone or on paper's edges", () => {
    for (const width of [5, 8, 13, 64, 67]) {
      for (const value of [127, 128, 129]) {
        for (const [x, y] of [
          [0, 0],
          [width - 1, 0],
          [0, 9],
          [width - 1, 9],
          [Math.floor(width / 2), 4],
        ] as const) {
          for (const offset of [0, 1, 2, 3]) {
            const grey = inBuffer(width * 10, offset).fill(255);
            grey[y * width + x] = value;
            for (const threshold of [127, 128, 129, 130]) {
              const expected = referenceInkBounds(grey, width, 10, 1, threshold);
              expect(expected === undefined).toBe(value >= threshold);
              expect(inkBounds(grey, width, 10, 1, threshold)).toEqual(expected);
            }
          }
        }
      }
    }
  });

  it("unreadInk gives what it did on random pages, read boxes, areas and options", () => {
    const random = seeded(2);
    let regions = 0;
    for (let round = 0; round < 300; round++) {
      const width = 40 + Math.floor(random() * 360);
      const height = 40 + Math.floor(random() * 260);
      const { grey, lines } = randomPage(random, width, height, round % 4);
      // What was read: some of the lines (their boxes, or a few px off them), and random boxes.
      const read: OcrBox[] = [];
      for (const line of lines) {
        if (random() < 0.3) continue;
        const off = () => (random() < 0.5 ? 0 : Math.floor(random() * 7) - 3);
        read.push({ x0: line.x0 + off(), y0: line.y0 + off(), x1: line.x1 + off(), y1: line.y1 + off() });
      }
      for (let box = Math.floor(random() * 4); box > 0; box--) {
        const x0 = Math.floor(random() * width);
        const y0 = Math.floor(random() * height);
        read.push({ x0, y0, x1: x0 + Math.floor(random() * 80), y1: y0 + Math.floor(random() * 40) });
      }
      const left = random() < 0.3 ? 0 : Math.floor(random() * width);
      const top = random() < 0.3 ? 0 : Math.floor(random() * height);
      const area = {
        left,
        top,
        width: 1 + Math.floor(random() * (width - left)),
        height: 1 + Math.floor(random() * (height - top)),
      };
      const cell = pick(random, [1, 3, 4, 5, 7.5, 8, 13]);
      const options = {
        cell,
        minHeight: Math.floor(random() * 3) * cell,
        maxHeight: (2 + Math.floor(random() * 10)) * cell,
        join: Math.floor(random() * 60),
        limit: 1 + Math.floor(random() * 8),
      };
      const page = { grey, width, height };
      for (const threshold of [undefined, 60, 128, 129, 200, 256]) {
        const expected = referenceUnreadInk(page, area, read, options, threshold);
        expect(unreadInk(page, area, read, options, threshold)).toEqual(expected);
        regions += expected.length;
      }
    }
    // The pages had unread ink to find, not only nothing.
    expect(regions).toBeGreaterThan(300);
  });

  it("unreadInk gives what it did on text whose words were read, all but a few", () => {
    const random = seeded(3);
    for (let round = 0; round < 30; round++) {
      const width = 301 + Math.floor(random() * 300);
      const height = 400;
      const grey = inBuffer(width * height, round % 4).fill(255);
      const read: OcrBox[] = [];
      let unread = 0;
      // Lines of words 24 px tall, 16 px apart; anti-aliased edges of 129 and 128.
      for (let y0 = 10; y0 + 24 < height; y0 += 40) {
        for (let x0 = 5 + Math.floor(random() * 10); x0 + 30 < width; ) {
          const x1 = x0 + 10 + Math.floor(random() * 60);
          for (let y = y0; y < y0 + 24; y++) {
            grey.fill(random() < 0.5 ? 0 : 100, y * width + x0 + 1, y * width + Math.min(x1, width - 1));
            grey[y * width + x0] = 129;
            grey[y * width + Math.min(x1, width - 1)] = 128;
          }
          if (random() < 0.9) read.push({ x0, y0, x1: Math.min(x1, width - 1), y1: y0 + 23 });
          else unread++;
          x0 = x1 + 8 + Math.floor(random() * 20);
        }
      }
      const area = { left: 0, top: 0, width, height };
      const options = { cell: 8, minHeight: 20, maxHeight: 100, join: 60, limit: 6 };
      const expected = referenceUnreadInk({ grey, width, height }, area, read, options);
      expect(unreadInk({ grey, width, height }, area, read, options)).toEqual(expected);
      if (unread > 0) expect(expected.length).toBeGreaterThan(0);
    }
  });
});
