import { findGrids, type Grid, gridCells, insideGrid } from "./grid.js";
import type { Rules } from "./rules.js";

/**
 * What the extractor found on the page besides tesseract's layout: the ruling lines, and the words
 * of each ruled table as read again on its own (they replace the page pass's words there).
 */
export interface PageExtras {
  rules?: Rules;
  tableWords?: readonly OcrWord[];
}

/** A box in image px: left, top, right, bottom (tesseract's `bbox`). */
export interface OcrBox {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** The parts of tesseract.js's page layout the converter reads. */
export interface OcrWord {
  text: string;
  bbox: OcrBox;
  /** Tesseract's confidence in the word, 0..100 (hOCR's `x_wconf`, tesseract.js's `confidence`). */
  confidence?: number;
}
export interface OcrLine {
  words: readonly OcrWord[];
  bbox: OcrBox;
  /** Tesseract's row height (x-height plus ascenders and descenders); else the box height. */
  rowAttributes?: { rowHeight?: number } | null;
  /** The baseline, from its left end to its right end. */
  baseline?: { x0: number; y0: number; x1: number; y1: number } | null;
}
export interface OcrParagraph {
  lines: readonly OcrLine[];
}
export interface OcrBlock {
  paragraphs: readonly OcrParagraph[];
}

/** Tuning of {@link layoutToMarkdown}; every field has a default (see README "OCR layout rules"). */
export interface LayoutOptions {
  /** A line this many times the body text height (or more) is a heading. @default 1.3 */
  headingRatio?: number;
  /** A horizontal gap between words of at least this many line heights separates table cells. @default 1.2 */
  cellGap?: number;
}

/** First tokens read as bullets (tesseract reads `•` as several of these). */
const BULLETS = new Set([
  "•",
  "·",
  "●",
  "○",
  "◦",
  "▪",
  "■",
  "□",
  "‣",
  "⁃",
  "*",
  "-",
  "–",
  "—",
  "+",
  "«",
  "»",
  "©",
  "®",
  "°",
  "e",
  "o",
]);
const NUMBERED = /^(\d{1,3})[.)]$/;

interface FlatLine {
  line: OcrLine;
  text: string;
  height: number;
  paragraph: number;
  /** Index of the table this line belongs to, or -1. */
  table: number;
  /** Index of the ruled table (grid) this line lies in, or -1. */
  grid: number;
  /** Type size: the line's tallest letters above its baseline (see {@link sizeOf}). */
  size: number;
}

const heightOf = (line: OcrLine) => line.rowAttributes?.rowHeight ?? line.bbox.y1 - line.bbox.y0;
/**
 * The type size of a line, for headings: from the top of its tallest letter to its baseline (a
 * capital, an ascender or a digit; descenders left out). Tesseract's row height is inflated for
 * short lines (a one-word table cell reads 15 % taller than a sentence of the same type), which
 * made a heading over a table look like body text; the baseline measure does not drift that way.
 */
const sizeOf = (line: OcrLine) => {
  const baseline = line.baseline;
  if (baseline === undefined || baseline === null) return heightOf(line);
  const above = (baseline.y0 + baseline.y1) / 2 - line.bbox.y0;
  return above > 0 ? above : heightOf(line);
};
const wordsOf = (line: OcrLine) => line.words.filter((word) => word.text.trim() !== "");
const lineText = (line: OcrLine) =>
  wordsOf(line)
    .map((word) => word.text.trim())
    .join(" ");

function flatten(blocks: readonly OcrBlock[]): FlatLine[] {
  const lines: FlatLine[] = [];
  let paragraph = 0;
  for (const block of blocks) {
    for (const para of block.paragraphs) {
      for (const line of para.lines) {
        const text = lineText(line);
        if (text !== "")
          lines.push({
            line,
            text,
            height: Math.max(1, heightOf(line)),
            size: Math.max(1, sizeOf(line)),
            paragraph,
            table: -1,
            grid: -1,
          });
      }
      paragraph += 1;
    }
  }
  return lines;
}

/** The body text height: the median line height (or `size`), weighted by characters. */
function bodyHeight(lines: readonly FlatLine[], measure: "height" | "size" = "height"): number {
  const weighted = lines
    .map((line) => ({ height: line[measure], weight: line.text.length }))
    .sort((a, b) => a.height - b.height);
  const total = weighted.reduce((sum, entry) => sum + entry.weight, 0);
  let seen = 0;
  for (const entry of weighted) {
    seen += entry.weight;
    if (seen >= total / 2) return entry.height;
  }
  return weighted[0]?.height ?? 1;
}

/**
 * Characters tesseract reads a `•` bullet as (never a bullet glyph itself): in plain text a line
 * starting with one of them, then a space and more words, gets its `•` back. `e` and `o` only count
 * before a capital or a digit (as in the markdown rule). Real glyphs (`•`, `▪`, `-`, `–`, ...) are
 * kept as read.
 */
const BULLET_MISREADS = new Set(["*", "«", "»", "©", "®", "°", "e", "o"]);

/** `text` with a misread leading bullet replaced by `•` (see {@link BULLET_MISREADS}). */
function restoreBullet(line: OcrLine, text: string): string {
  const words = wordsOf(line);
  const first = words[0]?.text.trim() ?? "";
  if (words.length < 2 || !BULLET_MISREADS.has(first)) return text;
  const rest = text.slice(first.length).trimStart();
  if (/^[eo]$/.test(first) && !/^[A-Z0-9]/.test(rest)) return text;
  return `• ${rest}`;
}

/**
 * Plain text: the recognised lines in reading order, a blank line between paragraphs. A bullet
 * that tesseract read as `*`, `«`, `©`, `e`, ... is written as `•` (plain text has no markup).
 */
export function layoutToPlain(
  blocks: readonly OcrBlock[],
  extras: PageExtras = {},
  options: LayoutOptions = {},
): string {
  const lines = splitColumns(flatten(blocks));
  const grids = markGrids(lines, extras);
  // Unruled tables are read row by row too (tesseract's own order is often column by column).
  const tables = findTables(
    lines.filter((line) => line.grid === -1),
    options.cellGap ?? 1.2,
  );
  const emittedTables = new Set<number>();
  const out: string[] = [];
  const emitted = new Set<number>();
  let previous = -1;
  const emitGrid = (index: number) => {
    if (emitted.has(index)) return;
    emitted.add(index);
    if (out.length > 0) out.push("");
    out.push(...grids[index]!.cells.map((row) => row.filter((cell) => cell !== "").join(" ")));
    previous = -2;
  };
  for (const line of lines) {
    grids.forEach((read, index) => {
      if (line.grid === -1 && read.grid.top < line.line.bbox.y0) emitGrid(index);
    });
    if (line.grid !== -1) {
      emitGrid(line.grid);
      continue;
    }
    if (line.table !== -1) {
      if (!emittedTables.has(line.table)) {
        emittedTables.add(line.table);
        if (out.length > 0) out.push("");
        out.push(...tables[line.table]!.map((row) => row.cells.map((cell) => cell.text).join(" ")));
        previous = -2;
      }
      continue;
    }
    if (previous !== -1 && line.paragraph !== previous) out.push("");
    out.push(restoreBullet(line.line, line.text));
    previous = line.paragraph;
  }
  for (let index = 0; index < grids.length; index += 1) emitGrid(index);
  return out.join("\n");
}

/** A ruled table with its cell texts. */
interface ReadGrid {
  grid: Grid;
  cells: string[][];
}

/**
 * Finds the ruled tables (from `rules`), reads their cells from the words inside, and marks the
 * lines lying in them (most of their words inside) so the flow leaves them to the table.
 */
function markGrids(lines: FlatLine[], extras: PageExtras): ReadGrid[] {
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

/**
 * Two text columns that tesseract read as one (each line running across the gutter): where at
 * least three consecutive rows have a gap wider than three line heights at the same place, with
 * a few words on each side, every such line is cut at the gutter, and the whole left column is
 * read before the right one.
 */
function splitColumns(lines: FlatLine[]): FlatLine[] {
  const gutterOf = (line: FlatLine): { from: number; to: number } | undefined => {
    const words = wordsOf(line.line);
    let best: { from: number; to: number; at: number } | undefined;
    for (let index = 1; index < words.length; index += 1) {
      const from = words[index - 1]!.bbox.x1;
      const to = words[index]!.bbox.x0;
      if (to - from >= 3 * line.height && (best === undefined || to - from > best.to - best.from)) {
        best = { from, to, at: index };
      }
    }
    if (best === undefined || best.at < 2 || words.length - best.at < 2) return undefined;
    return best;
  };
  const out: FlatLine[] = [];
  let index = 0;
  while (index < lines.length) {
    const first = gutterOf(lines[index]!);
    let end = index;
    let gutter = first;
    while (gutter !== undefined && end + 1 < lines.length) {
      const next = gutterOf(lines[end + 1]!);
      if (next === undefined) break;
      const from = Math.max(gutter.from, next.from);
      const to = Math.min(gutter.to, next.to);
      if (to <= from) break;
      gutter = { from, to };
      end += 1;
    }
    if (gutter === undefined || end - index + 1 < 3) {
      out.push(lines[index]!);
      index += 1;
      continue;
    }
    const middle = (gutter.from + gutter.to) / 2;
    const left: FlatLine[] = [];
    const right: FlatLine[] = [];
    for (const line of lines.slice(index, end + 1)) {
      const words = wordsOf(line.line);
      const side = (keep: (word: OcrWord) => boolean, offset: number): FlatLine | undefined => {
        const part = words.filter(keep);
        if (part.length === 0) return undefined;
        const bbox = {
          x0: Math.min(...part.map((word) => word.bbox.x0)),
          y0: Math.min(...part.map((word) => word.bbox.y0)),
          x1: Math.max(...part.map((word) => word.bbox.x1)),
          y1: Math.max(...part.map((word) => word.bbox.y1)),
        };
        const split: OcrLine = { words: part, bbox, rowAttributes: line.line.rowAttributes ?? null };
        return { ...line, line: split, text: lineText(split), paragraph: line.paragraph * 2 + offset };
      };
      const l = side((word) => word.bbox.x1 <= middle, 0);
      const r = side((word) => word.bbox.x0 >= middle, 1);
      if (l !== undefined) left.push(l);
      if (r !== undefined) right.push(r);
    }
    // Paragraph ids stay ordered: the left column's come first.
    const base = Math.max(...lines.map((line) => line.paragraph)) * 2 + 2;
    for (const line of right) line.paragraph += base;
    out.push(...left, ...right);
    index = end + 1;
  }
  return out;
}

interface Row {
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
function findTables(lines: FlatLine[], cellGap: number): Row[][] {
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

function tableMarkdown(rows: readonly Row[]): string {
  return cellsMarkdown(rows.map((row) => row.cells.map((cell) => cell.text)));
}

/** A GFM table: the first row is the header. */
function cellsMarkdown(rows: readonly (readonly string[])[]): string {
  const render = (row: readonly string[]) => `| ${row.map(escapeCell).join(" | ")} |`;
  const [head, ...body] = rows;
  return [render(head!), `| ${head!.map(() => "---").join(" | ")} |`, ...body.map(render)].join("\n");
}

/**
 * Converts tesseract's blocks, paragraphs, lines and words to markdown (rules in the README):
 * headings from line height relative to the body text, paragraphs (lines joined, split on a
 * paragraph change or a vertical gap), bullet and numbered list items (continuation lines joined),
 * and tables where rows of short word groups line up in at least 2 columns over at least 2 rows.
 */
export function layoutToMarkdown(
  blocks: readonly OcrBlock[],
  options: LayoutOptions = {},
  extras: PageExtras = {},
): string {
  const headingRatio = options.headingRatio ?? 1.3;
  const cellGap = options.cellGap ?? 1.2;
  const lines = splitColumns(flatten(blocks));
  if (lines.length === 0) return "";
  const body = bodyHeight(lines);
  const bodySize = bodyHeight(lines, "size");
  const grids = markGrids(lines, extras);
  const tables = findTables(
    lines.filter((line) => line.grid === -1),
    cellGap,
  );
  const out: string[] = [];
  const emitted = new Set<number>();
  let paragraph: string[] = [];
  let item: { prefix: string; text: string; x0: number } | undefined;
  const flush = () => {
    if (item !== undefined) out.push(`${item.prefix}${item.text}`);
    item = undefined;
    if (paragraph.length > 0) out.push(paragraph.join(" ").replace(/- (?=[a-z])/g, "-"), "");
    paragraph = [];
  };
  let previous: FlatLine | undefined;
  let lastKind: "list" | "other" = "other";
  let listKind: "bullet" | "numbered" = "bullet";
  const emittedGrids = new Set<number>();
  const emitGrid = (index: number) => {
    if (emittedGrids.has(index)) return;
    flush();
    if (lastKind === "list") out.push("");
    emittedGrids.add(index);
    out.push(cellsMarkdown(grids[index]!.cells), "");
    lastKind = "other";
  };
  for (const line of lines) {
    // A ruled table goes before the first line below its top (the page pass may hold none of it).
    grids.forEach((read, index) => {
      if (line.grid === -1 && read.grid.top < line.line.bbox.y0) emitGrid(index);
    });
    if (line.grid !== -1) {
      emitGrid(line.grid);
      previous = line;
      continue;
    }
    if (line.table !== -1) {
      if (!emitted.has(line.table)) {
        flush();
        if (lastKind === "list") out.push("");
        emitted.add(line.table);
        out.push(tableMarkdown(tables[line.table]!), "");
        lastKind = "other";
      }
      previous = line;
      continue;
    }
    const gap = previous === undefined ? 0 : line.line.bbox.y0 - previous.line.bbox.y1;
    const newBlock = previous === undefined || previous.paragraph !== line.paragraph || gap > 0.8 * body;
    const words = wordsOf(line.line);
    const first = words[0]!.text.trim();
    const rest = words
      .slice(1)
      .map((word) => word.text.trim())
      .join(" ");
    const ratio = line.size / bodySize;
    const numbered = NUMBERED.exec(first);
    const bullet =
      words.length > 1 &&
      BULLETS.has(first) &&
      // A lone `e`/`o` is only a bullet when the item starts like a sentence.
      (!/^[eo]$/.test(first) || /^[A-Z0-9]/.test(rest));
    if (ratio >= headingRatio && words.length <= 12 && !bullet && numbered === null) {
      flush();
      if (lastKind === "list") out.push("");
      const level = ratio >= 1.9 ? 1 : ratio >= 1.5 ? 2 : 3;
      const last = out[out.length - 2];
      const prefix = `${"#".repeat(level)} `;
      // Consecutive lines of one heading (same paragraph, same level) stay one heading.
      if (!newBlock && last?.startsWith(prefix) === true && out[out.length - 1] === "") {
        out[out.length - 2] = `${last} ${line.text}`;
      } else {
        out.push(`${prefix}${line.text}`, "");
      }
      lastKind = "other";
    } else if (bullet || (numbered !== null && words.length > 1)) {
      flush();
      const kind = bullet ? "bullet" : "numbered";
      // A new list (after other content, or a bullet list after a numbered one) starts after a blank line.
      if ((lastKind !== "list" || kind !== listKind) && out.length > 0 && out[out.length - 1] !== "") {
        out.push("");
      }
      item = { prefix: bullet ? "- " : `${numbered![1]}. `, text: rest, x0: line.line.bbox.x0 };
      lastKind = "list";
      listKind = kind;
    } else if (item !== undefined && !newBlock && line.line.bbox.x0 > item.x0) {
      item.text += ` ${line.text}`;
    } else {
      if (newBlock || item !== undefined) flush();
      if (lastKind === "list") out.push("");
      paragraph.push(line.text);
      lastKind = "other";
    }
    previous = line;
  }
  flush();
  for (let index = 0; index < grids.length; index += 1) emitGrid(index);
  return out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
