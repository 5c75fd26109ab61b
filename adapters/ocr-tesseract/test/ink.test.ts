import { describe, expect, it } from "vitest";
import type { Region } from "../src/grey-page.js";
import { inkBounds, paperWords, skipPaper, unreadInk } from "../src/ink.js";
import type { OcrBox } from "../src/layout.js";
import { seeded } from "./seeded.js";

/** A white page with the given dark rectangles. */
function page(width: number, height: number, marks: { x: number; y: number; w: number; h: number }[]) {
  const grey = new Uint8Array(width * height).fill(255);
  for (const { x, y, w, h } of marks) {
    for (let row = y; row < y + h; row++) grey.fill(20, row * width + x, row * width + x + w);
  }
  return grey;
}

describe("inkBounds", () => {
  it("is the box around every dark pixel, grown by the margin", () => {
    const grey = page(300, 200, [
      { x: 100, y: 50, w: 10, h: 5 },
      { x: 40, y: 120, w: 3, h: 3 },
      { x: 250, y: 90, w: 1, h: 1 },
    ]);
    expect(inkBounds(grey, 300, 200, 0)).toEqual({ left: 40, top: 50, width: 211, height: 73 });
    expect(inkBounds(grey, 300, 200, 10)).toEqual({ left: 30, top: 40, width: 231, height: 93 });
  });

  it("clips the margin to the page and finds ink on its edges", () => {
    const grey = page(64, 48, [
      { x: 0, y: 20, w: 2, h: 2 },
      { x: 63, y: 47, w: 1, h: 1 },
    ]);
    expect(inkBounds(grey, 64, 48, 0)).toEqual({ left: 0, top: 20, width: 64, height: 28 });
    expect(inkBounds(grey, 64, 48, 30)).toEqual({ left: 0, top: 0, width: 64, height: 48 });
  });

  it("counts only pixels darker than the threshold, and answers nothing for a page without ink", () => {
    const grey = page(50, 50, []);
    grey[25 * 50 + 25] = 128;
    expect(inkBounds(grey, 50, 50, 4)).toBeUndefined();
    grey[10 * 50 + 12] = 127;
    expect(inkBounds(grey, 50, 50, 2)).toEqual({ left: 10, top: 8, width: 5, height: 5 });
    expect(inkBounds(grey, 50, 50, 0, 129)).toEqual({ left: 12, top: 10, width: 14, height: 16 });
  });

  it("matches a full scan on random sparse pages", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 20; round++) {
      const width = 20 + Math.floor(random() * 200);
      const height = 20 + Math.floor(random() * 200);
      const grey = new Uint8Array(width * height).fill(255);
      const dots = 1 + Math.floor(random() * 6);
      for (let dot = 0; dot < dots; dot++) grey[Math.floor(random() * width * height)] = 0;
      let [x0, y0, x1, y1] = [width, height, -1, -1];
      grey.forEach((value, index) => {
        if (value >= 128) return;
        const [x, y] = [index % width, Math.floor(index / width)];
        [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)];
      });
      expect(inkBounds(grey, width, height, 0)).toEqual({
        left: x0,
        top: y0,
        width: x1 - x0 + 1,
        height: y1 - y0 + 1,
      });
    }
  });
});

describe("unreadInk", () => {
  const options = { cell: 8, minHeight: 20, maxHeight: 100, join: 60, limit: 6 };
  const whole = { left: 0, top: 0, width: 400, height: 300 };
  const read = [{ x0: 20, y0: 22, x1: 119, y1: 47 }];

  it("finds text-sized ink outside the read words, in cells, grown by a cell", () => {
    const grey = page(400, 300, [
      { x: 20, y: 22, w: 100, h: 26 }, // a word that was read
      { x: 300, y: 22, w: 20, h: 28 }, // a number that was not
    ]);
    // The number's cells: columns 37-39 (296-319), rows 2-6 (16-55); grown by 8 px.
    expect(unreadInk({ grey, width: 400, height: 300 }, whole, read, options)).toEqual([
      { left: 288, top: 8, width: 40, height: 56 },
    ]);
    // Read, it is not ink to read again; nor is ink within 2 px of a read box (its anti-aliasing).
    const edge = page(400, 300, [{ x: 20, y: 22, w: 102, h: 27 }]);
    expect(unreadInk({ grey: edge, width: 400, height: 300 }, whole, read, options)).toEqual([]);
  });

  it("leaves specks and pictures, joins a column of numbers into one region, and stops at the limit", () => {
    const grey = page(400, 300, [
      { x: 200, y: 200, w: 3, h: 3 }, // a speck: one cell high
      { x: 330, y: 120, w: 60, h: 150 }, // a picture: taller than maxHeight
      { x: 300, y: 22, w: 20, h: 28 },
      { x: 300, y: 100, w: 20, h: 28 }, // 40 px below the first: read with it
    ]);
    expect(unreadInk({ grey, width: 400, height: 300 }, whole, [], options)).toEqual([
      { left: 288, top: 8, width: 40, height: 128 },
    ]);
    const many = page(
      400,
      300,
      Array.from({ length: 8 }, (_, index) => ({
        x: 10 + (index % 4) * 100,
        y: 20 + Math.floor(index / 4) * 150,
        w: 12,
        h: 24,
      })),
    );
    const found = unreadInk({ grey: many, width: 400, height: 300 }, whole, [], options);
    expect(found).toHaveLength(6);
    // In reading order: the first row's four, then the second row's first two.
    expect(found.map((region) => region.top)).toEqual([8, 8, 8, 8, 160, 160]);
  });

  it("finds nothing on a page of more than 256 unread pieces (a picture's texture)", () => {
    const width = 1200;
    const height = 1200;
    const spots = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        x: 8 + (index % 30) * 40,
        y: 8 + Math.floor(index / 30) * 40,
        w: 10,
        h: 24,
      }));
    const area = { left: 0, top: 0, width, height };
    const few = unreadInk({ grey: page(width, height, spots(256)), width, height }, area, [], options);
    expect(few.length).toBeGreaterThan(0);
    expect(unreadInk({ grey: page(width, height, spots(257)), width, height }, area, [], options)).toEqual(
      [],
    );
  });

  it("looks only inside the area it is given", () => {
    const grey = page(400, 300, [{ x: 300, y: 22, w: 20, h: 28 }]);
    const area = { left: 0, top: 0, width: 250, height: 300 };
    expect(unreadInk({ grey, width: 400, height: 300 }, area, [], options)).toEqual([]);
  });
});

/**
 * The scans as they were before they stepped over paper a word at a time (ink.ts at 80a32f2),
 * pixel by pixel, verbatim: the scans must give exactly what these give, on every page.
 */
const { referenceInkBounds, referenceUnreadInk } = (() => {
  function referenceInkBounds(
    grey: Uint8Array,
    width: number,
    height: number,
    margin: number,
    threshold = 128,
  ): Region | undefined {
    const inked = (row: number) => {
      const start = row * width;
      for (let index = start; index < start + width; index++) if (grey[index]! < threshold) return true;
      return false;
    };
    let top = 0;
    while (top < height && !inked(top)) top++;
    if (top === height) return undefined;
    let bottom = height - 1;
    while (!inked(bottom)) bottom--;
    let left = width;
    let right = -1;
    for (let row = top; row <= bottom; row++) {
      const start = row * width;
      for (let x = 0; x < left; x++) {
        if (grey[start + x]! < threshold) {
          left = x;
          break;
        }
      }
      for (let x = width - 1; x > right; x--) {
        if (grey[start + x]! < threshold) {
          right = x;
          break;
        }
      }
    }
    const x0 = Math.max(0, left - margin);
    const y0 = Math.max(0, top - margin);
    const x1 = Math.min(width - 1, right + margin);
    const y1 = Math.min(height - 1, bottom + margin);
    return { left: x0, top: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 };
  }

  /**
   * The regions of a greyscale page with ink that no box of `read` covers: text tesseract's page
   * layout dropped (the page numbers of a table of contents, far from their titles, are the case
   * measured). The page is looked at in square cells of `cell` px; cells with ink outside every
   * read box (grown by 2 px) are joined into components, each component's bounds must be text-sized
   * (`minHeight`..`maxHeight` tall), and components closer than `join` px are read together. At
   * most `limit` regions, each grown by `cell` px and clipped to `area`; none when there are more than
   * {@link MAX_PIECES} text-sized components (a picture's texture).
   */
  function referenceUnreadInk(
    page: { grey: Uint8Array; width: number; height: number },
    area: Region,
    read: readonly OcrBox[],
    options: { cell: number; minHeight: number; maxHeight: number; join: number; limit: number },
    threshold = 128,
  ): Region[] {
    const { grey, width } = page;
    const { cell } = options;
    const columns = Math.ceil(area.width / cell);
    const rows = Math.ceil(area.height / cell);
    // A pixel inside a read box grown by 2 px (a box is tight around its glyphs' ink) was read. Each
    // row's covered ranges go into two preallocated arrays: the loop over the ink allocates nothing
    // (a closure per pixel grew V8's young generation by about 15 MB over the document suite).
    const ink = new Uint8Array(columns * rows);
    const from = new Int32Array(read.length);
    const to = new Int32Array(read.length);
    const right = area.left + area.width;
    for (let row = 0; row < rows; row++) {
      const top = area.top + row * cell;
      const bottom = Math.min(area.top + area.height, top + cell);
      for (let y = top; y < bottom; y++) {
        let ranges = 0;
        for (const box of read) {
          if (y < box.y0 - 2 || y > box.y1 + 2) continue;
          from[ranges] = box.x0 - 2;
          to[ranges] = box.x1 + 2;
          ranges++;
        }
        const start = y * width;
        for (let x = area.left; x < right; x++) {
          if (grey[start + x]! >= threshold) continue;
          const index = row * columns + Math.floor((x - area.left) / cell);
          if (ink[index] === 1) continue;
          let covered = false;
          for (let range = 0; range < ranges && !covered; range++) {
            covered = x >= from[range]! && x <= to[range]!;
          }
          if (!covered) ink[index] = 1;
        }
      }
    }
    // Components of ink cells (8-connected), as boxes in page px.
    const boxes: Region[] = [];
    const seen = new Uint8Array(ink.length);
    for (let start = 0; start < ink.length; start++) {
      if (ink[start] === 0 || seen[start] === 1) continue;
      let minColumn = columns;
      let maxColumn = -1;
      let minRow = rows;
      let maxRow = -1;
      const stack = [start];
      seen[start] = 1;
      while (stack.length > 0) {
        const index = stack.pop()!;
        const row = Math.floor(index / columns);
        const column = index % columns;
        minColumn = Math.min(minColumn, column);
        maxColumn = Math.max(maxColumn, column);
        minRow = Math.min(minRow, row);
        maxRow = Math.max(maxRow, row);
        for (let dy = -1; dy <= 1; dy++) {
          for (let dx = -1; dx <= 1; dx++) {
            const r = row + dy;
            const c = column + dx;
            if (r < 0 || c < 0 || r >= rows || c >= columns) continue;
            const next = r * columns + c;
            if (ink[next] === 1 && seen[next] === 0) {
              seen[next] = 1;
              stack.push(next);
            }
          }
        }
      }
      const box = {
        left: area.left + minColumn * cell,
        top: area.top + minRow * cell,
        width: (maxColumn - minColumn + 1) * cell,
        height: (maxRow - minRow + 1) * cell,
      };
      if (box.height >= options.minHeight && box.height <= options.maxHeight) boxes.push(box);
    }
    // More text-sized pieces than that is a picture's texture, not dropped text (and joining them,
    // quadratic in their number per merge, would take seconds).
    if (boxes.length > MAX_PIECES) return [];
    // Components within `join` px of each other are read as one region (a column of page numbers).
    const regions = joinRegions(boxes, options.join);
    return regions.slice(0, options.limit).map((region) => {
      const left = Math.max(area.left, region.left - cell);
      const top = Math.max(area.top, region.top - cell);
      const right = Math.min(area.left + area.width, region.left + region.width + cell);
      const bottom = Math.min(area.top + area.height, region.top + region.height + cell);
      return { left, top, width: right - left, height: bottom - top };
    });
  }

  /** The most unread pieces {@link referenceUnreadInk} joins into regions; a page with more has none. */
  const MAX_PIECES = 256;

  /** Merges regions closer than `gap` px (in both directions) until none are. */
  function joinRegions(regions: readonly Region[], gap: number): Region[] {
    const out = regions.map((region) => ({ ...region }));
    let merged = true;
    while (merged) {
      merged = false;
      for (let i = 0; i < out.length && !merged; i++) {
        for (let j = i + 1; j < out.length && !merged; j++) {
          const a = out[i]!;
          const b = out[j]!;
          const apart =
            Math.max(a.left, b.left) - Math.min(a.left + a.width, b.left + b.width) >= gap ||
            Math.max(a.top, b.top) - Math.min(a.top + a.height, b.top + b.height) >= gap;
          if (apart) continue;
          const left = Math.min(a.left, b.left);
          const top = Math.min(a.top, b.top);
          out[i] = {
            left,
            top,
            width: Math.max(a.left + a.width, b.left + b.width) - left,
            height: Math.max(a.top + a.height, b.top + b.height) - top,
          };
          out.splice(j, 1);
          merged = true;
        }
      }
    }
    return out.sort((a, b) => a.top - b.top || a.left - b.left);
  }

  return { referenceInkBounds, referenceUnreadInk };
})();

const pick = <T>(random: () => number, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;

/** Values at and around the thresholds the scans use (60, 127.5, 128, 129, 200, 255), and paper. */
const EDGE_VALUES = [0, 1, 59, 60, 61, 126, 127, 128, 129, 130, 199, 200, 201, 254, 255];

/**
 * `length` bytes at `offset` (0-3) into a bigger buffer whose bytes around them are ink (0): a scan
 * that read outside the page would find it, and its words are unaligned to the page's rows.
 */
function inBuffer(length: number, offset: number): Uint8Array {
  return new Uint8Array(offset + length + 7).subarray(offset, offset + length);
}

interface Line {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/**
 * A random page: paper of 255 (or, for a photo's, mid-grey, or with light noise), lines of
 * "glyphs" (ink bars with gaps) of random heights, specks, pixels at the edges, in values at and
 * around the thresholds; sometimes blank. Its lines' boxes come with it (inclusive corners).
 */
function randomPage(random: () => number, width: number, height: number, offset: number) {
  const grey = inBuffer(width * height, offset);
  const background = random();
  for (let index = 0; index < grey.length; index++) {
    if (background < 0.65) grey[index] = 255;
    else if (background < 0.8) grey[index] = 129 + Math.floor(random() * 127);
    else grey[index] = random() < 0.05 ? pick(random, EDGE_VALUES) : 255;
  }
  const lines: Line[] = [];
  if (random() < 0.08) return { grey, lines };
  const set = (x: number, y: number, value: number) => {
    if (x >= 0 && y >= 0 && x < width && y < height) grey[y * width + x] = value;
  };
  const count = Math.floor(random() * 8);
  for (let line = 0; line < count; line++) {
    const lineHeight = 1 + Math.floor(random() * Math.min(40, height));
    const y0 = Math.floor(random() * Math.max(1, height - lineHeight + 1));
    const x0 = Math.floor(random() * width);
    const x1 = Math.min(width - 1, x0 + Math.floor(random() * width));
    const value = random() < 0.5 ? 20 : pick(random, EDGE_VALUES);
    for (let x = x0; x <= x1; x++) {
      if (random() < 0.3) continue; // the gaps between glyphs
      for (let y = y0; y < y0 + lineHeight; y++) if (random() < 0.8) set(x, y, value);
    }
    lines.push({ x0, y0, x1, y1: Math.min(height - 1, y0 + lineHeight - 1) });
  }
  const specks = random() < 0.3 ? Math.floor(random() * 200) : Math.floor(random() * 6);
  for (let speck = 0; speck < specks; speck++) {
    set(Math.floor(random() * width), Math.floor(random() * height), pick(random, EDGE_VALUES));
  }
  if (random() < 0.4) {
    // Ink touching every edge of the page.
    const value = pick(random, EDGE_VALUES);
    set(0, Math.floor(random() * height), value);
    set(width - 1, Math.floor(random() * height), value);
    set(Math.floor(random() * width), 0, value);
    set(Math.floor(random() * width), height - 1, value);
  }
  return { grey, lines };
}

/** Widths around multiples of 4 and 8 (the word size, and the 16 pixels stepped at once). */
const WIDTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 129, 255, 257, 333, 401];

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
