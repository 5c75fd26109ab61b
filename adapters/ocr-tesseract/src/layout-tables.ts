import { findGrids, type Grid, gridCells, insideGrid } from "./grid.js";
import type { PageExtras } from "./layout.js";
import { bodyHeight, type FlatLine, wordsOf } from "./layout-lines.js";

/** A ruled table with its cell texts. */
export interface ReadGrid {
  grid: Grid;
  cells: string[][];
}

/**
 * Finds the ruled tables (from `rules`), reads their cells from the words inside, and marks the
 * lines lying in them (most of their words inside) so the flow leaves them to the table.
 */
export function markGrids(lines: FlatLine[], extras: PageExtras): ReadGrid[] {
  const { rules } = extras;
  if (rules === undefined || lines.length === 0) return [];
  const body = bodyHeight(lines);
  const pageWords = lines.flatMap((line) => wordsOf(line.line));
  const tableWords = (extras.tableWords ?? []).filter((word) => word.text.trim() !== "");
  const grids = findGrids(rules, 0.5 * body)
    .map((grid) => {
      const own = tableWords.filter((word) => insideGrid(grid, word));
      const words = own.length > 0 ? own : pageWords;
      return { grid, cells: gridCells(grid, words, 1.2 * body) };
    })
    .filter((read) => read.cells.length > 0);
  for (const line of lines) {
    const inLine = wordsOf(line.line);
    const index = grids.findIndex(
      (read) => inLine.filter((word) => insideGrid(read.grid, word)).length * 2 > inLine.length,
    );
    line.grid = index;
  }
  return grids;
}

export interface Row {
  members: FlatLine[];
  top: number;
  bottom: number;
  height: number;
  cells: { text: string; x0: number; x1: number; words: number }[];
}

/** Groups lines of the whole page into visual rows (lines side by side at the same height). */
function rowsOf(lines: readonly FlatLine[], cellGap: number): Row[] {
  const sorted = [...lines].sort(
    (a, b) => a.line.bbox.y0 + a.line.bbox.y1 - (b.line.bbox.y0 + b.line.bbox.y1),
  );
  const rows: Row[] = [];
  for (const line of sorted) {
    const { y0, y1 } = line.line.bbox;
    const row = rows.find((candidate) => {
      const overlap = Math.min(candidate.bottom, y1) - Math.max(candidate.top, y0);
      return overlap >= 0.5 * Math.min(candidate.bottom - candidate.top, y1 - y0);
    });
    if (row === undefined) {
      rows.push({ members: [line], top: y0, bottom: y1, height: line.height, cells: [] });
    } else {
      row.members.push(line);
      row.top = Math.min(row.top, y0);
      row.bottom = Math.max(row.bottom, y1);
      row.height = Math.max(row.height, line.height);
    }
  }
  for (const row of rows) {
    const words = row.members.flatMap((member) => wordsOf(member.line)).sort((a, b) => a.bbox.x0 - b.bbox.x0);
    let cell: Row["cells"][number] | undefined;
    for (const word of words) {
      if (cell === undefined || word.bbox.x0 - cell.x1 >= cellGap * row.height) {
        cell = { text: word.text.trim(), x0: word.bbox.x0, x1: word.bbox.x1, words: 1 };
        row.cells.push(cell);
      } else {
        cell.text += ` ${word.text.trim()}`;
        cell.x1 = Math.max(cell.x1, word.bbox.x1);
        cell.words += 1;
      }
    }
  }
  return rows.sort((a, b) => a.top - b.top);
}

/** Cells of two rows line up column by column (their x-ranges overlap). */
function aligned(a: Row, b: Row): boolean {
  if (a.cells.length !== b.cells.length || a.cells.length < 2) return false;
  return a.cells.every((cell, index) => {
    const other = b.cells[index]!;
    return (
      Math.min(cell.x1, other.x1) - Math.max(cell.x0, other.x0) > 0 || Math.abs(cell.x0 - other.x0) < a.height
    );
  });
}

/** Finds runs of at least 2 aligned rows of short cells; marks their lines; returns the tables. */
export function findTables(lines: FlatLine[], cellGap: number): Row[][] {
  const rows = rowsOf(lines, cellGap);
  const tables: Row[][] = [];
  const shortCells = (row: Row) => row.cells.every((cell) => cell.words <= 4);
  let run: Row[] = [];
  const close = () => {
    if (run.length >= 2) {
      for (const row of run) for (const member of row.members) member.table = tables.length;
      tables.push(run);
    }
    run = [];
  };
  for (const row of rows) {
    const previous = run[run.length - 1];
    const near = previous !== undefined && row.top - previous.bottom < 2.5 * previous.height;
    if (
      row.cells.length >= 2 &&
      shortCells(row) &&
      (previous === undefined || (near && aligned(previous, row)))
    ) {
      run.push(row);
    } else {
      close();
      if (row.cells.length >= 2 && shortCells(row)) run.push(row);
    }
  }
  close();
  return tables;
}

const escapeCell = (text: string) => text.replace(/\|/g, "\\|");

export function tableMarkdown(rows: readonly Row[]): string {
  return cellsMarkdown(rows.map((row) => row.cells.map((cell) => cell.text)));
}

/** A GFM table: the first row is the header. */
export function cellsMarkdown(rows: readonly (readonly string[])[]): string {
  const render = (row: readonly string[]) => `| ${row.map(escapeCell).join(" | ")} |`;
  const [head, ...body] = rows;
  return [render(head!), `| ${head!.map(() => "---").join(" | ")} |`, ...body.map(render)].join("\n");
}
