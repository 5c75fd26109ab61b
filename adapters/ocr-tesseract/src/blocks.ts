import type { OcrBlock, OcrBox, OcrLine, OcrWord } from "./layout.js";

/**
 * `blocks` with each of `words` added to the line it stands on (the line its box overlaps most
 * vertically, by at least half the shorter height), in reading order along it; words on no line
 * become lines of a block of their own, placed by their top.
 */
export function withWords(blocks: readonly OcrBlock[], words: readonly OcrWord[]): OcrBlock[] {
  if (words.length === 0) return [...blocks];
  const lines = linesOf(blocks);
  const added = new Map<OcrLine, OcrWord[]>();
  const alone: OcrWord[] = [];
  for (const word of words) {
    let best: OcrLine | undefined;
    let bestOverlap = 0;
    for (const line of lines) {
      const overlap = Math.min(line.bbox.y1, word.bbox.y1) - Math.max(line.bbox.y0, word.bbox.y0);
      const shorter = Math.min(line.bbox.y1 - line.bbox.y0, word.bbox.y1 - word.bbox.y0);
      if (overlap >= 0.5 * shorter && overlap > bestOverlap) {
        best = line;
        bestOverlap = overlap;
      }
    }
    if (best === undefined) alone.push(word);
    else added.set(best, [...(added.get(best) ?? []), word]);
  }
  const merged = blocks.map((block) => ({
    paragraphs: block.paragraphs.map((paragraph) => ({
      lines: paragraph.lines.map((line) => {
        const extra = added.get(line);
        if (extra === undefined) return line;
        const all = [...line.words, ...extra].sort((a, b) => a.bbox.x0 - b.bbox.x0);
        return {
          ...line,
          words: all,
          bbox: {
            x0: Math.min(line.bbox.x0, ...extra.map((word) => word.bbox.x0)),
            y0: line.bbox.y0,
            x1: Math.max(line.bbox.x1, ...extra.map((word) => word.bbox.x1)),
            y1: line.bbox.y1,
          },
        };
      }),
    })),
  }));
  if (alone.length === 0) return merged;
  // Words on no line: one line each, in a block placed by its top.
  const sorted = [...alone].sort((a, b) => a.bbox.y0 - b.bbox.y0 || a.bbox.x0 - b.bbox.x0);
  const block: OcrBlock = {
    paragraphs: [{ lines: sorted.map((word) => ({ words: [word], bbox: word.bbox })) }],
  };
  return withTables(merged, [{ top: sorted[0]!.bbox.y0, blocks: [block] }]);
}

/** The lines of `blocks`, in order. */
export const linesOf = (blocks: readonly OcrBlock[]) =>
  blocks.flatMap((block) => block.paragraphs.flatMap((paragraph) => paragraph.lines));

/** The words of `blocks`, in order. */
export const wordsOf = (blocks: readonly OcrBlock[]) => linesOf(blocks).flatMap((line) => line.words);

/** The top of a block's first line (Infinity for a block without lines). */
const blockTop = (block: OcrBlock) => Math.min(...linesOf([block]).map((line) => line.bbox.y0));

/**
 * The page's blocks with each table's blocks put where the table stands: before the first page
 * block that starts below the table's top (the layout step orders lines by their boxes within
 * that flow, and places a table by the lines inside its grid).
 */
export function withTables(
  blocks: readonly OcrBlock[],
  tables: readonly { top: number; blocks: readonly OcrBlock[] }[],
): OcrBlock[] {
  const merged = [...blocks];
  for (const table of tables) {
    const at = merged.findIndex((block) => blockTop(block) > table.top);
    merged.splice(at < 0 ? merged.length : at, 0, ...table.blocks);
  }
  return merged;
}

/** Blocks read from a cut moved by the cut's offset (what the layout step reads: boxes, baselines). */
export function moveBlocks(blocks: readonly OcrBlock[], dx: number, dy: number): OcrBlock[] {
  const box = (b: OcrBox): OcrBox => ({ x0: b.x0 + dx, y0: b.y0 + dy, x1: b.x1 + dx, y1: b.y1 + dy });
  return blocks.map((block) => ({
    paragraphs: block.paragraphs.map((paragraph) => ({
      lines: paragraph.lines.map((line) => ({
        ...line,
        bbox: box(line.bbox),
        baseline: line.baseline == null ? line.baseline : box(line.baseline),
        words: line.words.map((word) => ({ ...word, bbox: box(word.bbox) })),
      })),
    })),
  }));
}
