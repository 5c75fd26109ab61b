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
}
export interface OcrLine {
  words: readonly OcrWord[];
  bbox: OcrBox;
  /** Tesseract's row height (x-height plus ascenders and descenders); else the box height. */
  rowAttributes?: { rowHeight?: number } | null;
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
}

const heightOf = (line: OcrLine) => line.rowAttributes?.rowHeight ?? line.bbox.y1 - line.bbox.y0;
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
          lines.push({ line, text, height: Math.max(1, heightOf(line)), paragraph, table: -1 });
      }
      paragraph += 1;
    }
  }
  return lines;
}

/** The body text height: the median line height, weighted by characters. */
function bodyHeight(lines: readonly FlatLine[]): number {
  const weighted = lines
    .map((line) => ({ height: line.height, weight: line.text.length }))
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
export function layoutToPlain(blocks: readonly OcrBlock[]): string {
  const out: string[] = [];
  let previous = -1;
  for (const line of flatten(blocks)) {
    if (previous !== -1 && line.paragraph !== previous) out.push("");
    out.push(restoreBullet(line.line, line.text));
    previous = line.paragraph;
  }
  return out.join("\n");
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
  const render = (row: Row) => `| ${row.cells.map((cell) => escapeCell(cell.text)).join(" | ")} |`;
  const [head, ...body] = rows;
  return [render(head!), `| ${head!.cells.map(() => "---").join(" | ")} |`, ...body.map(render)].join("\n");
}

/**
 * Converts tesseract's blocks, paragraphs, lines and words to markdown (rules in the README):
 * headings from line height relative to the body text, paragraphs (lines joined, split on a
 * paragraph change or a vertical gap), bullet and numbered list items (continuation lines joined),
 * and tables where rows of short word groups line up in at least 2 columns over at least 2 rows.
 */
export function layoutToMarkdown(blocks: readonly OcrBlock[], options: LayoutOptions = {}): string {
  const headingRatio = options.headingRatio ?? 1.3;
  const cellGap = options.cellGap ?? 1.2;
  const lines = flatten(blocks);
  if (lines.length === 0) return "";
  const body = bodyHeight(lines);
  const tables = findTables(lines, cellGap);
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
  for (const line of lines) {
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
    const ratio = line.height / body;
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
  return out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
