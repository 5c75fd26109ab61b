import type { OcrBox } from "./layout.js";
import type { Region } from "./native.js";

/**
 * The smallest region holding every pixel of a greyscale page darker than `threshold` (the ink),
 * grown by `margin` px on each side and clipped to the page; `undefined` for a page without ink.
 *
 * The extractor's page pass reads only this region: tesseract's layout analysis (binarisation,
 * connected components, block finding) costs in proportion to the pixels it is given, and the
 * rendered documents of the OCR suite are about half margin (BENCHMARKS.md, "OCR"). Each row is
 * scanned only outside the bounds found so far, so a page costs about one pass over its margins.
 */
export function inkBounds(
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
export function unreadInk(
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
