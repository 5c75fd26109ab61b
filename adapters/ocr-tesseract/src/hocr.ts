import type { OcrBlock, OcrBox, OcrLine, OcrParagraph, OcrWord } from "./layout.js";

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeHtml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function boxOf(title: string, dx: number, dy: number): OcrBox | undefined {
  const match = /\bbbox (-?\d+) (-?\d+) (-?\d+) (-?\d+)/.exec(title);
  if (match === null) return undefined;
  return {
    x0: Number(match[1]) + dx,
    y0: Number(match[2]) + dy,
    x1: Number(match[3]) + dx,
    y1: Number(match[4]) + dy,
  };
}

/** hOCR's line classes (tesseract writes headers, floating text and captions as lines too). */
const LINE_CLASSES = new Set(["ocr_line", "ocr_header", "ocr_textfloat", "ocr_caption"]);

/**
 * Tesseract's hOCR as the layout the converter reads (blocks, paragraphs, lines with their row
 * height and baseline, words with boxes), the same structure tesseract.js answers: a line's
 * `x_size` is its row height, and its `baseline` (slope and offset from the bottom-left corner of
 * its box) becomes the baseline's two ends. `dx`/`dy` shift every box (a region read on its own).
 */
export function parseHocr(hocr: string, dx = 0, dy = 0): OcrBlock[] {
  const blocks: { paragraphs: OcrParagraph[] }[] = [];
  let paragraphs: OcrParagraph[] | undefined;
  let lines: OcrLine[] | undefined;
  let words: OcrWord[] | undefined;
  const tag = /<(?:div|p|span)\b[^>]*?\bclass=(["'])([a-z_]+)\1[^>]*?\btitle=(["'])(.*?)\3[^>]*>/g;
  for (let match = tag.exec(hocr); match !== null; match = tag.exec(hocr)) {
    const kind = match[2] as string;
    const title = match[4] as string;
    if (kind === "ocr_carea") {
      paragraphs = [];
      blocks.push({ paragraphs });
      lines = undefined;
      words = undefined;
    } else if (kind === "ocr_par") {
      if (paragraphs === undefined) {
        paragraphs = [];
        blocks.push({ paragraphs });
      }
      lines = [];
      paragraphs.push({ lines });
      words = undefined;
    } else if (LINE_CLASSES.has(kind)) {
      const bbox = boxOf(title, dx, dy);
      if (bbox === undefined) continue;
      if (lines === undefined) {
        lines = [];
        if (paragraphs === undefined) {
          paragraphs = [];
          blocks.push({ paragraphs });
        }
        paragraphs.push({ lines });
      }
      words = [];
      const size = /\bx_size (-?[\d.]+)/.exec(title);
      const base = /\bbaseline (-?[\d.]+) (-?[\d.]+)/.exec(title);
      let baseline: OcrLine["baseline"] = null;
      if (base !== null) {
        const slope = Number(base[1]);
        const offset = Number(base[2]);
        baseline = {
          x0: bbox.x0,
          y0: bbox.y1 + offset,
          x1: bbox.x1,
          y1: bbox.y1 + offset + slope * (bbox.x1 - bbox.x0),
        };
      }
      lines.push({
        words,
        bbox,
        rowAttributes: size === null ? null : { rowHeight: Number(size[1]) },
        baseline,
      });
    } else if (kind === "ocrx_word" && words !== undefined) {
      const bbox = boxOf(title, dx, dy);
      const end = hocr.indexOf("</span>", tag.lastIndex);
      if (bbox === undefined || end < 0) continue;
      // Tesseract may wrap a word in <strong>/<em> (font info); the text is what is left.
      const text = unescapeHtml(hocr.slice(tag.lastIndex, end).replace(/<[^>]*>/g, "")).trim();
      const confidence = /\bx_wconf (\d+)/.exec(title);
      if (text !== "")
        words.push({ text, bbox, ...(confidence === null ? {} : { confidence: Number(confidence[1]) }) });
    }
  }
  return blocks;
}
