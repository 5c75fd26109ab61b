import type { LayoutOptions, OcrBlock, OcrLine, PageExtras } from "./layout.js";
import { flatten, splitColumns, wordsOf } from "./layout-lines.js";
import { findTables, markGrids } from "./layout-tables.js";

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
