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

export { layoutToMarkdown } from "./layout-markdown.js";
export { layoutToPlain } from "./layout-plain.js";
