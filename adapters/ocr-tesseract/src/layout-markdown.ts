import type { LayoutOptions, OcrBlock, PageExtras } from "./layout.js";
import { bodyHeight, type FlatLine, flatten, splitColumns, wordsOf } from "./layout-lines.js";
import { cellsMarkdown, findTables, markGrids, tableMarkdown } from "./layout-tables.js";

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
  const writer = new MarkdownWriter();
  const emittedTables = new Set<number>();
  const emittedGrids = new Set<number>();
  const emitGrid = (index: number) => {
    if (emittedGrids.has(index)) return;
    emittedGrids.add(index);
    writer.block(cellsMarkdown(grids[index]!.cells));
  };
  let previous: FlatLine | undefined;
  for (const line of lines) {
    // A ruled table goes before the first line below its top (the page pass may hold none of it).
    grids.forEach((read, index) => {
      if (line.grid === -1 && read.grid.top < line.line.bbox.y0) emitGrid(index);
    });
    if (line.grid !== -1) {
      emitGrid(line.grid);
    } else if (line.table !== -1) {
      if (!emittedTables.has(line.table)) {
        emittedTables.add(line.table);
        writer.block(tableMarkdown(tables[line.table]!));
      }
    } else {
      const gap = previous === undefined ? 0 : line.line.bbox.y0 - previous.line.bbox.y1;
      const newBlock = previous === undefined || previous.paragraph !== line.paragraph || gap > 0.8 * body;
      writeLine(writer, line, { newBlock, ratio: line.size / bodySize, headingRatio });
    }
    previous = line;
  }
  writer.flush();
  for (let index = 0; index < grids.length; index += 1) emitGrid(index);
  return writer.markdown();
}

/**
 * Writes a line of the flow as what it reads as: a heading (`ratio`, its type size to the body
 * text's, at least `headingRatio`, and at most 12 words), a bullet or numbered list item, the
 * continuation of the open item (indented past its start, no new block), or paragraph text.
 */
function writeLine(
  writer: MarkdownWriter,
  line: FlatLine,
  { newBlock, ratio, headingRatio }: { newBlock: boolean; ratio: number; headingRatio: number },
): void {
  const words = wordsOf(line.line);
  const first = words[0]!.text.trim();
  const rest = words
    .slice(1)
    .map((word) => word.text.trim())
    .join(" ");
  const numbered = NUMBERED.exec(first);
  const bullet =
    words.length > 1 &&
    BULLETS.has(first) &&
    // A lone `e`/`o` is only a bullet when the item starts like a sentence.
    (!/^[eo]$/.test(first) || /^[A-Z0-9]/.test(rest));
  if (ratio >= headingRatio && words.length <= 12 && !bullet && numbered === null) {
    writer.heading(line.text, ratio >= 1.9 ? 1 : ratio >= 1.5 ? 2 : 3, newBlock);
  } else if (bullet || (numbered !== null && words.length > 1)) {
    const prefix = bullet ? "- " : `${numbered![1]}. `;
    writer.listItem(bullet ? "bullet" : "numbered", { prefix, text: rest, x0: line.line.bbox.x0 });
  } else {
    writer.text(line.text, line.line.bbox.x0, newBlock);
  }
}

/** The markdown written so far, with the paragraph or list item still open. */
class MarkdownWriter {
  private readonly out: string[] = [];
  private paragraph: string[] = [];
  private item: { prefix: string; text: string; x0: number } | undefined;
  private lastKind: "list" | "other" = "other";
  private listKind: "bullet" | "numbered" = "bullet";

  /** Ends the open list item and paragraph (a paragraph's lines joined, hyphenation undone). */
  flush(): void {
    if (this.item !== undefined) this.out.push(`${this.item.prefix}${this.item.text}`);
    this.item = undefined;
    if (this.paragraph.length > 0) this.out.push(this.paragraph.join(" ").replace(/- (?=[a-z])/g, "-"), "");
    this.paragraph = [];
  }

  /** A block of its own (a table), after a blank line when a list precedes it. */
  block(markdown: string): void {
    this.flush();
    if (this.lastKind === "list") this.out.push("");
    this.out.push(markdown, "");
    this.lastKind = "other";
  }

  /** A heading; consecutive lines of one heading (same paragraph, same level) stay one heading. */
  heading(text: string, level: number, newBlock: boolean): void {
    this.flush();
    const out = this.out;
    if (this.lastKind === "list") out.push("");
    const last = out[out.length - 2];
    const prefix = `${"#".repeat(level)} `;
    if (!newBlock && last?.startsWith(prefix) === true && out[out.length - 1] === "") {
      out[out.length - 2] = `${last} ${text}`;
    } else {
      out.push(`${prefix}${text}`, "");
    }
    this.lastKind = "other";
  }

  /** Opens a list item; a new list (after other content, or of the other kind) starts after a blank line. */
  listItem(kind: "bullet" | "numbered", item: { prefix: string; text: string; x0: number }): void {
    this.flush();
    const out = this.out;
    if (
      (this.lastKind !== "list" || kind !== this.listKind) &&
      out.length > 0 &&
      out[out.length - 1] !== ""
    ) {
      out.push("");
    }
    this.item = item;
    this.lastKind = "list";
    this.listKind = kind;
  }

  /** Text: the open item's continuation when indented past its start in the same block, else paragraph text. */
  text(text: string, x0: number, newBlock: boolean): void {
    if (this.item !== undefined && !newBlock && x0 > this.item.x0) {
      this.item.text += ` ${text}`;
      return;
    }
    if (newBlock || this.item !== undefined) this.flush();
    if (this.lastKind === "list") this.out.push("");
    this.paragraph.push(text);
    this.lastKind = "other";
  }

  /** The markdown: at most one blank line in a row, none at either end. */
  markdown(): string {
    return this.out
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trim();
  }
}
