import type { Region } from "../src/grey-page.js";
import type { OcrBox } from "../src/layout.js";

// The pixel-by-pixel versions of the ink scans and the random pages they are compared on
// (ink-scans.test.ts).

/**
 * The scans as they were before they stepped over paper a word at a time (ink.ts at 80a32f2),
 * pixel by pixel, verbatim: the scans must give exactly what these give, on every page.
 */
export const { referenceInkBounds, referenceUnreadInk } = (() => {
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

export const pick = <T>(random: () => number, values: readonly T[]): T =>
  values[Math.floor(random() * values.length)]!;

/** Values at and around the thresholds the scans use (60, 127.5, 128, 129, 200, 255), and paper. */
export const EDGE_VALUES = [0, 1, 59, 60, 61, 126, 127, 128, 129, 130, 199, 200, 201, 254, 255];

/**
 * `length` bytes at `offset` (0-3) into a bigger buffer whose bytes around them are ink (0): a scan
 * that read outside the page would find it, and its words are unaligned to the page's rows.
 */
export function inBuffer(length: number, offset: number): Uint8Array {
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
export function randomPage(random: () => number, width: number, height: number, offset: number) {
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
export const WIDTHS = [
  1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 129, 255, 257, 333, 401,
];
