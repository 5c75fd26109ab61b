import { withTables, withWords, wordsOf } from "./blocks.js";
import { blank, clip, type GreyPage, type Region } from "./grey-page.js";
import { findGrids } from "./grid.js";
import { inkBounds, unreadInk } from "./ink.js";
import type { OcrBlock, OcrWord } from "./layout.js";
import { TARGET_LINE_HEIGHT } from "./line-height.js";
import type { PageReader } from "./reader-pool.js";
import type { Rules } from "./rules.js";

/** At most this many regions of unread ink are read again per page (each is a read). */
const MAX_UNREAD_REGIONS = 6;

/** A word read from unread ink is kept at this confidence (0..100) or more: not a picture's noise. */
const MIN_RECOVERED_CONFIDENCE = 70;

/**
 * The layout of a pre-processed page read by `reader`: its ruled tables one by one, then the page
 * pass over the rest, then the ink the page pass dropped; each read gives up at `deadline`. The
 * page's pixels are painted over as it goes (tables, then the words read).
 */
export async function readLayout(
  reader: PageReader,
  input: GreyPage,
  rules: Rules,
  deadline: Promise<never>,
): Promise<{ blocks: OcrBlock[]; tableWords: OcrWord[] }> {
  const { tables, tableWords } = await readTables(reader, input, rules, deadline);
  // The page pass reads the part of the page that has ink (tables blanked), with a margin of
  // a text line: about half the pixels of the suite's pages, and 10-15 % of tesseract's time.
  const area = inkBounds(input.grey, input.width, input.height, TARGET_LINE_HEIGHT) ?? {
    left: 0,
    top: 0,
    width: input.width,
    height: input.height,
  };
  const pageBlocks = await Promise.race([reader.readPage(input, area), deadline]);
  const recovered = await readDropped(reader, input, area, pageBlocks, deadline);
  return { blocks: withTables(withWords(pageBlocks, recovered), tables), tableWords };
}

/**
 * Ruled tables are read on their own, each as one block of text (page segmentation mode 6, or for
 * the native engine a zone file): in a page pass tesseract drops short, isolated cell texts (a
 * lone number in a column). Their regions come from the rules. They are read first, then painted
 * white for the page pass, which so reads each table's text once, not twice: about a third less
 * time for the page pass of a table page (BENCHMARKS.md, "OCR").
 */
async function readTables(
  reader: PageReader,
  input: GreyPage,
  rules: Rules,
  deadline: Promise<never>,
): Promise<{ tables: { top: number; blocks: OcrBlock[] }[]; tableWords: OcrWord[] }> {
  const regions = findGrids(rules, 0.5 * TARGET_LINE_HEIGHT).map((grid) =>
    clip(input, {
      left: Math.floor(grid.left),
      top: Math.floor(grid.top),
      width: Math.ceil(grid.right - grid.left),
      height: Math.ceil(grid.bottom - grid.top),
    }),
  );
  const tables: { top: number; blocks: OcrBlock[] }[] = [];
  const tableWords: OcrWord[] = [];
  for (const region of regions) {
    const table = await Promise.race([reader.readBlock(input, region), deadline]);
    tables.push({ top: region.top, blocks: table });
    tableWords.push(...wordsOf(table));
  }
  blank(input, regions);
  return { tables, tableWords };
}

/**
 * Text the page layout dropped (a contents page's numbers far right of their titles), read in a
 * second pass over the ink no word of `pageBlocks` covers inside `area`: its confident words.
 */
async function readDropped(
  reader: PageReader,
  input: GreyPage,
  area: Region,
  pageBlocks: readonly OcrBlock[],
  deadline: Promise<never>,
): Promise<OcrWord[]> {
  const pageBoxes = wordsOf(pageBlocks).map((word) => word.bbox);
  const unread = unreadInk(input, area, pageBoxes, {
    cell: TARGET_LINE_HEIGHT / 5,
    minHeight: 0.5 * TARGET_LINE_HEIGHT,
    maxHeight: 2.5 * TARGET_LINE_HEIGHT,
    join: 1.5 * TARGET_LINE_HEIGHT,
    limit: MAX_UNREAD_REGIONS,
  });
  const recovered: OcrWord[] = [];
  if (unread.length === 0) return recovered;
  // The words read are painted out first, so a region holds only what was dropped.
  blank(
    input,
    pageBoxes.map((box) =>
      clip(input, {
        left: box.x0 - 2,
        top: box.y0 - 2,
        width: box.x1 - box.x0 + 5,
        height: box.y1 - box.y0 + 5,
      }),
    ),
  );
  for (const region of unread) {
    const found = await Promise.race([reader.readBlock(input, region), deadline]);
    recovered.push(
      ...wordsOf(found).filter(
        (word) => (word.confidence ?? 0) >= MIN_RECOVERED_CONFIDENCE && /[\p{L}\p{N}]/u.test(word.text),
      ),
    );
  }
  return recovered;
}
