import type { OcrBlock, OcrLine, OcrWord } from "./layout.js";

/** A line of the page as the converter reads it: its text, sizes, and what it belongs to. */
export interface FlatLine {
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
export const wordsOf = (line: OcrLine) => line.words.filter((word) => word.text.trim() !== "");
const lineText = (line: OcrLine) =>
  wordsOf(line)
    .map((word) => word.text.trim())
    .join(" ");

export function flatten(blocks: readonly OcrBlock[]): FlatLine[] {
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
export function bodyHeight(lines: readonly FlatLine[], measure: "height" | "size" = "height"): number {
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
 * Two text columns that tesseract read as one (each line running across the gutter): where at
 * least three consecutive rows have a gap wider than three line heights at the same place, with
 * a few words on each side, every such line is cut at the gutter, and the whole left column is
 * read before the right one.
 */
export function splitColumns(lines: FlatLine[]): FlatLine[] {
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
