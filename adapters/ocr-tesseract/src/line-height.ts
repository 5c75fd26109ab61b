/**
 * The body text's line height of a page, measured from its pixels before recognition, so the page
 * can be scaled to the text size tesseract reads best (instead of to a fixed page size: a 3000 px
 * page of small print and a 1000 px page of large print need opposite scalings).
 */

import { paperWords, skipPaper } from "./ink.js";

/** Ink line height (ascender to descender, px) the recogniser is given. */
export const TARGET_LINE_HEIGHT = 40;

/** The scale that brings `lineHeight` to {@link TARGET_LINE_HEIGHT}, within 0.4..3. */
export function scaleFor(lineHeight: number): number {
  return Math.min(3, Math.max(0.4, TARGET_LINE_HEIGHT / lineHeight));
}

/**
 * The median height of the text lines of a greyscale page (ink at or below 128), or `undefined`
 * when no line is found. The page is cut into vertical strips (so a tilted photo of a page or
 * two text columns with offset lines still give separate lines); in each strip, runs of rows that
 * hold ink are lines. Runs under 4 px (specks, grain) and over a quarter of the page (pictures)
 * are ignored. Each line counts once per strip it appears in, so the body text, which covers
 * the most area, dominates headings.
 */
export function estimateLineHeight(grey: Uint8Array, width: number, height: number): number | undefined {
  const stripWidth = Math.max(64, Math.ceil(width / 8));
  // A row of a strip is read up to its first ink, stepping over paper (pixels over 128) 4 to 16
  // at a time (see `paperWords`): the rows between lines are read whole, about 85 % of a page's
  // pixels, which took 5.2 ms a pixel at a time on the suite's 2400x1788 page, and take 1.1 ms.
  const paper = paperWords(grey, 129);
  const heights: number[] = [];
  for (let left = 0; left < width; left += stripWidth) {
    const right = Math.min(width, left + stripWidth);
    let start = -1;
    for (let y = 0; y <= height; y += 1) {
      let ink = false;
      if (y < height) {
        const row = y * width;
        const end = row + right;
        for (let index = row + left; index < end; index += 1) {
          index = skipPaper(paper, index, end);
          if (index < end && grey[index]! <= 128) {
            ink = true;
            break;
          }
        }
      }
      if (ink && start === -1) start = y;
      else if (!ink && start !== -1) {
        const run = y - start;
        if (run >= 4 && run <= height / 4) heights.push(run);
        start = -1;
      }
    }
  }
  if (heights.length === 0) return undefined;
  heights.sort((a, b) => a - b);
  return heights[Math.floor(heights.length / 2)];
}
