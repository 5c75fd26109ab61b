import { characterErrorRate } from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTesseractTextExtractor } from "../src/index.js";

/**
 * Large print: a slide's title at three times its body's size, and banners (one line of text as
 * tall as the image). The strokes of such letters (an `l`'s stem, the sides of an `O`) must not
 * pass for a table's ruling lines: when they did, they were painted white before recognition and
 * handed to the layout step as a grid, so "Hello OCR world" at 120 px read as "Hallo OC KR world" followed by
 * lines of fragments. (Debian's tesseract CLI reads every page here within the same limit.)
 */
const MAX_CER = 0.02;

interface Page {
  name: string;
  svg: string;
  text: string;
}

const TITLE = "Quarterly Results Hit";
const BODY = ["Revenue grew in all regions this year", "Details follow in the tables below"];

/** A slide: `TITLE` at `size` px, then `BODY` at a third of it. */
function slide(font: string, weight: string, size: number): Page {
  const bodySize = Math.round(size / 3);
  const width = Math.round(size * 14);
  const height = Math.round(size * 1.8 + bodySize * 3.6);
  const body = BODY.map(
    (line, index) =>
      `<text x="${size / 2}" y="${Math.round(size * 1.7 + bodySize * 1.4 * (index + 1))}" font-size="${bodySize}" font-family="${font}">${line}</text>`,
  ).join("");
  return {
    name: `slide, ${font} ${weight} ${size} px title`,
    svg: `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/><text x="${size / 2}" y="${Math.round(size * 1.2)}" font-size="${size}" font-family="${font}" font-weight="${weight}">${TITLE}</text>${body}</svg>`,
    text: [TITLE, ...BODY].join("\n"),
  };
}

/** A banner: `text` at `size` px in an image barely taller than the line. */
function banner(font: string, weight: string, size: number, text: string): Page {
  const width = Math.round(size * 0.62 * text.length + size);
  const height = Math.round(size * 1.6);
  return {
    name: `banner, ${font} ${weight} ${size} px`,
    svg: `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/><text x="${size / 2}" y="${Math.round(size * 1.15)}" font-size="${size}" font-family="${font}" font-weight="${weight}">${text}</text></svg>`,
    text,
  };
}

const PAGES: Page[] = [
  slide("DejaVu Serif", "normal", 120),
  slide("DejaVu Serif", "bold", 120),
  slide("Liberation Sans", "normal", 200),
  slide("DejaVu Sans Mono", "normal", 72),
  slide("DejaVu Sans Light", "normal", 120),
  banner("DejaVu Sans", "normal", 120, "Hello OCR world"),
  banner("Liberation Serif", "bold", 200, "Grand Opening"),
  banner("Liberation Sans Narrow", "normal", 400, "SALE today"),
];

describe.each(["wasm", "native"] as const)("large print (%s)", (engine) => {
  const extractor = createTesseractTextExtractor({ engine, workers: 1, timeoutMs: 120_000 });
  const images = new Map<string, { data: Uint8Array; width: number; height: number }>();
  beforeAll(async () => {
    sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
    for (const page of PAGES) {
      const { data, info } = await sharp(Buffer.from(page.svg)).png().toBuffer({ resolveWithObject: true });
      images.set(page.name, { data: new Uint8Array(data), width: info.width, height: info.height });
    }
  });
  afterAll(() => extractor.close());

  it.each(PAGES.map((page) => [page.name, page] as const))(
    `%s: plain text within ${MAX_CER} character error rate`,
    async (_name, page) => {
      const image = { ...images.get(page.name)!, mimeType: "image/png" as const };
      const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
      expect(characterErrorRate(plain, page.text), plain).toBeLessThanOrEqual(MAX_CER);
    },
    120_000,
  );
});
