import type { Region } from "./grey-page.js";
import type { OcrBox } from "./layout.js";
import { pageWords } from "./words.js";

/**
 * A greyscale page read four pixels at a time, for the scans below to step over paper a 32-bit word
 * at a time instead of a byte at a time. The contrast stretch makes paper exactly 255 (94-97 % of
 * the pixels of the OCR suite's text pages; its photos' paper is mid-grey), and whether a word's
 * four pixels are all at least a limit takes a few integer operations. `words` and `lead` are
 * {@link pageWords}'.
 */
export interface PaperWords {
  words: Int32Array;
  lead: number;
  /**
   * A word is paper when each of its pixels is at least 128 and its low 7 bits at least
   * `low / 0x01010101`; -1 when no word is (a limit over 255, or NaN).
   */
  low: number;
}

const HIGH_BITS = 0x80808080 | 0;
const LOW_BITS = 0x7f7f7f7f;

/**
 * The words of `grey` and the test that tells the ones whose pixels are all at least `paper`:
 * 129 for ink at or below 128, `threshold` for ink below it. For limits of 128 to 255 the test is
 * exact; for lower ones it errs on the safe side (it takes only words of pixels of at least 128
 * for paper). The scans compare each pixel of a word that is not paper with their own test, so
 * what they count as ink, and where they find it first, is what they found a pixel at a time.
 */
export function paperWords(grey: Uint8Array, paper: number): PaperWords {
  const { lead, words } = pageWords(grey);
  // A pixel of at least 128 is at least `paper` when its low 7 bits are at least `paper - 128`:
  // subtracting that from each byte of a word's low bits (each at most 0x7f, so none borrows from
  // the next) sets a high bit if, and only if, one of the pixels is below it.
  const low = paper <= 255 ? Math.max(0, Math.ceil(paper) - 128) * 0x01010101 : -1;
  return { words, lead, low };
}

/** Whether a word of four pixels is all paper (see {@link paperWords}; `low` not -1). */
function isPaper(pixels: number, low: number): boolean {
  return (pixels & HIGH_BITS) === HIGH_BITS && (((pixels & LOW_BITS) - low) & HIGH_BITS) === 0;
}

/**
 * Whether four words are all paper: {@link isPaper} on 16 pixels at once (the four words' high
 * bits together, their four subtractions' borrows together), after the shortcut of 16 pixels of
 * 255. Stepping over the whole 2400x1788 page of the suite took 1.6 ms a word at a time and 1.15
 * this way (4 ms a byte at a time).
 */
function arePaper(a: number, b: number, c: number, d: number, low: number): boolean {
  const all = a & b & c & d;
  if (all === -1) return true;
  const borrows =
    ((a & LOW_BITS) - low) | ((b & LOW_BITS) - low) | ((c & LOW_BITS) - low) | ((d & LOW_BITS) - low);
  return (all & HIGH_BITS) === HIGH_BITS && (borrows & HIGH_BITS) === 0;
}

/**
 * The first index from `from` on that is not in a word of paper lying wholly before `to` (so `to`
 * or more when there is only paper up to it). A `from` not at a word's first pixel is returned as
 * it is: the caller tests that pixel itself and asks again from the next one.
 */
export function skipPaper(paper: PaperWords, from: number, to: number): number {
  const { words, lead, low } = paper;
  if (low < 0 || from < lead || (from - lead) % 4 !== 0) return from;
  const end = Math.min(words.length, Math.floor((to - lead) / 4));
  let word = (from - lead) / 4;
  while (
    word + 4 <= end &&
    arePaper(words[word]!, words[word + 1]!, words[word + 2]!, words[word + 3]!, low)
  ) {
    word += 4;
  }
  while (word < end && isPaper(words[word]!, low)) word++;
  return lead + 4 * word;
}

/**
 * The last index from `from` down that is not in a word of paper lying wholly at or after `to` (so
 * below `to` when there is only paper down to it): {@link skipPaper} backwards. A `from` not at a
 * word's last pixel is returned as it is.
 */
function skipPaperBack(paper: PaperWords, from: number, to: number): number {
  const { words, lead, low } = paper;
  if (low < 0 || from < lead || (from + 1 - lead) % 4 !== 0) return from;
  let word = (from + 1 - lead) / 4 - 1;
  if (word >= words.length) return from;
  const end = Math.max(0, Math.ceil((to - lead) / 4));
  while (
    word - 3 >= end &&
    arePaper(words[word]!, words[word - 1]!, words[word - 2]!, words[word - 3]!, low)
  ) {
    word -= 4;
  }
  while (word >= end && isPaper(words[word]!, low)) word--;
  return lead + 4 * word + 3;
}

/**
 * The smallest region holding every pixel of a greyscale page darker than `threshold` (the ink),
 * grown by `margin` px on each side and clipped to the page; `undefined` for a page without ink.
 *
 * The extractor's page pass reads only this region: tesseract's layout analysis (binarisation,
 * connected components, block finding) costs in proportion to the pixels it is given, and the
 * rendered documents of the OCR suite are about half margin (BENCHMARKS.md, "OCR"). Each row is
 * scanned only outside the bounds found so far, so a page costs about one pass over its margins,
 * and that pass steps over paper 4 to 16 pixels at a time ({@link paperWords}): 0.45 ms on the
 * suite's 2400x1788 page, 4.2 ms a pixel at a time.
 */
export function inkBounds(
  grey: Uint8Array,
  width: number,
  height: number,
  margin: number,
  threshold = 128,
): Region | undefined {
  const paper = paperWords(grey, threshold);
  const inked = (row: number) => {
    const start = row * width;
    const end = start + width;
    for (let index = start; index < end; index++) {
      index = skipPaper(paper, index, end);
      if (index < end && grey[index]! < threshold) return true;
    }
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
    for (let index = start; index < start + left; index++) {
      index = skipPaper(paper, index, start + left);
      if (index < start + left && grey[index]! < threshold) {
        left = index - start;
        break;
      }
    }
    for (let index = start + width - 1; index > start + right; index--) {
      index = skipPaperBack(paper, index, start + right + 1);
      if (index > start + right && grey[index]! < threshold) {
        right = index - start;
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
export function unreadInk(
  page: { grey: Uint8Array; width: number; height: number },
  area: Region,
  read: readonly OcrBox[],
  options: { cell: number; minHeight: number; maxHeight: number; join: number; limit: number },
  threshold = 128,
): Region[] {
  const { cell } = options;
  const cells = unreadCells(page, area, read, cell, threshold);
  const boxes = cellComponents(cells, area, cell).filter(
    (box) => box.height >= options.minHeight && box.height <= options.maxHeight,
  );
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

/** The cells of `area` (`cell` px squares, row after row) with ink: 1 where a cell has unread ink. */
interface InkCells {
  ink: Uint8Array;
  columns: number;
  rows: number;
}

/** Marks the cells of `area` that hold ink (below `threshold`) outside every box of `read`. */
function unreadCells(
  page: { grey: Uint8Array; width: number; height: number },
  area: Region,
  read: readonly OcrBox[],
  cell: number,
  threshold: number,
): InkCells {
  const { grey, width } = page;
  const columns = Math.ceil(area.width / cell);
  const rows = Math.ceil(area.height / cell);
  // A pixel inside a read box grown by 2 px (a box is tight around its glyphs' ink) was read. Each
  // row's covered ranges go into two preallocated arrays: the loop over the ink allocates nothing
  // (a closure per pixel grew V8's young generation by about 15 MB over the document suite).
  const ink = new Uint8Array(columns * rows);
  const from = new Int32Array(read.length);
  const to = new Int32Array(read.length);
  const right = area.left + area.width;
  // Once a pixel has marked its cell, or is found covered by a range, the pixels after it up to
  // the end of the cell, or of the range, cannot mark anything in this row and are stepped over,
  // and so is paper, 4 to 16 pixels at a time (see `paperWords`): most of the ink is the read
  // words', so most pixels are not looked at. On the suite's 2400x1788 page with its words read,
  // this call took 1.3 ms, and 7.7 ms looking at every pixel. The cells' columns are worked out
  // once per call: `column[i]` is pixel `area.left + i`'s, `next[i]` the first pixel after it in
  // another column.
  const column = new Int32Array(Math.max(0, Math.ceil(area.width)));
  for (let x = area.left; x < right; x++) column[x - area.left] = Math.floor((x - area.left) / cell);
  const next = new Int32Array(column.length);
  for (let i = column.length - 1; i >= 0; i--) {
    next[i] = i + 1 < column.length && column[i + 1] === column[i] ? next[i + 1]! : i + 1;
  }
  const paper = paperWords(grey, threshold);
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
      for (let x = area.left; x < right; ) {
        x = skipPaper(paper, start + x, start + right) - start;
        if (x >= right) break;
        if (grey[start + x]! >= threshold) {
          x++;
          continue;
        }
        const index = row * columns + column[x - area.left]!;
        if (ink[index] === 0) {
          let covered = -1;
          for (let range = 0; range < ranges && covered === -1; range++) {
            if (x >= from[range]! && x <= to[range]!) covered = range;
          }
          if (covered !== -1) {
            x = to[covered]! + 1;
            continue;
          }
          ink[index] = 1;
        }
        x = area.left + next[x - area.left]!;
      }
    }
  }
  return { ink, columns, rows };
}

/** The 8-connected components of the ink cells, as boxes in page px (whole cells). */
function cellComponents({ ink, columns, rows }: InkCells, area: Region, cell: number): Region[] {
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
    boxes.push(box);
  }
  return boxes;
}

/** The most unread pieces {@link unreadInk} joins into regions; a page with more has none. */
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
