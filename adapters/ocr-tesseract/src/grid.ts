/**
 * Ruled tables: the grid that a page's ruling lines draw, and the words that fall in its cells.
 *
 * Rows are the bands between consecutive horizontal rules and columns the bands between
 * consecutive vertical rules, so a table is read exactly as drawn, whatever tesseract's own block
 * segmentation made of it (it often cuts a ruled table into one block per cell, out of order).
 * A table drawn with horizontal rules only (no vertical ones) gets its columns from the gaps
 * between words that are empty in every row.
 */
import type { Rule, Rules } from "./rules.js";

/** A word as the layout reads it: text and box (left, top, right, bottom). */
export interface GridWord {
  text: string;
  bbox: { x0: number; y0: number; x1: number; y1: number };
}

/** A ruled table found on the page. */
export interface Grid {
  top: number;
  bottom: number;
  left: number;
  right: number;
  /** Row boundaries, top to bottom (n + 1 values for n rows). */
  rows: number[];
  /** Column boundaries, left to right; empty when the table has no vertical rules. */
  columns: number[];
}

const near = (a: number, b: number, tolerance: number) => Math.abs(a - b) <= tolerance;

/** Boundaries closer than `tolerance` collapse into one (a thick or doubled rule). */
function dedupe(values: number[], tolerance: number): number[] {
  const out: number[] = [];
  for (const value of [...values].sort((a, b) => a - b)) {
    if (out.length === 0 || value - out[out.length - 1]! > tolerance) out.push(value);
  }
  return out;
}

/**
 * The ruled tables of a page: runs of at least two horizontal rules of about the same extent
 * (ends within 5 % of their length), at least `minRowHeight` apart, with the vertical rules that
 * run between them as columns.
 */
export function findGrids(rules: Rules, minRowHeight: number): Grid[] {
  const horizontal = [...rules.horizontal].sort((a, b) => a.at - b.at);
  const groups: Rule[][] = [];
  for (const rule of horizontal) {
    const tolerance = 0.05 * (rule.to - rule.from);
    const group = groups.find((candidate) => {
      const last = candidate[candidate.length - 1]!;
      return near(last.from, rule.from, tolerance) && near(last.to, rule.to, tolerance);
    });
    if (group === undefined) groups.push([rule]);
    else group.push(rule);
  }
  const grids: Grid[] = [];
  for (const group of groups) {
    const rows = dedupe(
      group.map((rule) => rule.at),
      minRowHeight,
    );
    if (rows.length < 2) continue;
    const top = rows[0]!;
    const bottom = rows[rows.length - 1]!;
    const left = Math.min(...group.map((rule) => rule.from));
    const right = Math.max(...group.map((rule) => rule.to));
    const slack = Math.max(4, 0.02 * (right - left));
    const spanning = rules.vertical.filter(
      (rule) =>
        rule.at >= left - slack &&
        rule.at <= right + slack &&
        // The rule covers most of the table's height.
        Math.min(rule.to, bottom) - Math.max(rule.from, top) >= 0.5 * (bottom - top),
    );
    const columns = dedupe(
      spanning.map((rule) => rule.at),
      minRowHeight,
    );
    grids.push({ top, bottom, left, right, rows, columns: columns.length >= 2 ? columns : [] });
  }
  return grids;
}

const centre = (word: GridWord) => ({
  x: (word.bbox.x0 + word.bbox.x1) / 2,
  y: (word.bbox.y0 + word.bbox.y1) / 2,
});

/** Whether a word's centre lies inside the grid. */
export function insideGrid(grid: Grid, word: GridWord): boolean {
  const { x, y } = centre(word);
  return x >= grid.left && x <= grid.right && y >= grid.top && y <= grid.bottom;
}

const bandOf = (bounds: readonly number[], value: number) => {
  for (let index = 0; index < bounds.length - 1; index += 1) {
    if (value >= bounds[index]! && value <= bounds[index + 1]!) return index;
  }
  return -1;
};

/**
 * Column boundaries of a table without vertical rules: the x-ranges that no word of any row
 * covers, at least `minGap` wide, split the table's width.
 */
function columnsFromGaps(grid: Grid, words: readonly GridWord[], minGap: number): number[] {
  const spans = words.map((word) => [word.bbox.x0, word.bbox.x1] as const).sort((a, b) => a[0] - b[0]);
  const bounds = [grid.left];
  let reach = spans[0]?.[1] ?? grid.left;
  for (const [x0, x1] of spans.slice(1)) {
    if (x0 - reach >= minGap) bounds.push((x0 + reach) / 2);
    reach = Math.max(reach, x1);
  }
  bounds.push(grid.right);
  return bounds;
}

/**
 * The cell texts of `grid`, row by row: each word goes to the cell that holds its centre; a
 * cell's words are read line by line, left to right, joined by one space. Rows without any word
 * (a rule drawn twice, a spacer row) are left out.
 */
export function gridCells(grid: Grid, words: readonly GridWord[], minGap: number): string[][] {
  const inside = words.filter((word) => insideGrid(grid, word));
  const columns = grid.columns.length >= 2 ? grid.columns : columnsFromGaps(grid, inside, minGap);
  const cells: GridWord[][][] = Array.from({ length: grid.rows.length - 1 }, () =>
    Array.from({ length: columns.length - 1 }, () => []),
  );
  for (const word of inside) {
    const { x, y } = centre(word);
    const row = bandOf(grid.rows, y);
    const column = bandOf(columns, x);
    if (row !== -1 && column !== -1) cells[row]![column]!.push(word);
  }
  const text = (cell: GridWord[]) => {
    const height = Math.max(1, ...cell.map((word) => word.bbox.y1 - word.bbox.y0));
    return cell
      .sort((a, b) =>
        Math.abs(a.bbox.y0 - b.bbox.y0) > 0.5 * height ? a.bbox.y0 - b.bbox.y0 : a.bbox.x0 - b.bbox.x0,
      )
      .map((word) => word.text.trim())
      .join(" ");
  };
  return cells.filter((row) => row.some((cell) => cell.length > 0)).map((row) => row.map(text));
}
