import { characterErrorRate } from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withWords } from "../src/blocks.js";
import { createTesseractTextExtractor } from "../src/index.js";

/**
 * Text tesseract's page layout drops: a contents page's numbers, set far to the right of their
 * titles with nothing between. Debian's tesseract CLI reads the titles and no number of this page;
 * the extractor reads the ink no word covers in a second pass, and the numbers join the lines of
 * their titles.
 */
const ENTRIES = [
  ["Introduction", "1"],
  ["Getting started", "4"],
  ["Configuration", "11"],
  ["Deployment", "19"],
  ["Troubleshooting", "27"],
] as const;

function contentsPage(): string {
  const rows = ENTRIES.map(
    ([title, number], index) =>
      `<text x="20" y="${60 + index * 32}" font-size="20" font-family="DejaVu Serif">${title}</text>` +
      `<text x="560" y="${60 + index * 32}" font-size="20" font-family="DejaVu Serif">${number}</text>`,
  ).join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="660" height="240"><rect width="100%" height="100%" fill="white"/>${rows}</svg>`;
}

describe.each(["wasm", "native"] as const)("text the page layout drops (%s)", (engine) => {
  const extractor = createTesseractTextExtractor({ engine, workers: 1, timeoutMs: 120_000 });
  let image: { data: Uint8Array; mimeType: "image/png"; width: number; height: number };
  beforeAll(async () => {
    sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
    const { data, info } = await sharp(Buffer.from(contentsPage()))
      .png()
      .toBuffer({ resolveWithObject: true });
    image = { data: new Uint8Array(data), mimeType: "image/png", width: info.width, height: info.height };
  });
  afterAll(() => extractor.close());

  it("reads a contents page's numbers on the lines of their titles", async () => {
    const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
    expect(plain.split("\n")).toEqual(ENTRIES.map(([title, number]) => `${title} ${number}`));
  }, 120_000);

  it("makes the page a two-column table in markdown", async () => {
    const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
    const expected = [
      `| ${ENTRIES[0][0]} | ${ENTRIES[0][1]} |`,
      "| --- | --- |",
      ...ENTRIES.slice(1).map(([title, number]) => `| ${title} | ${number} |`),
    ].join("\n");
    expect(characterErrorRate(markdown, expected), markdown).toBe(0);
  }, 120_000);
});

describe("withWords", () => {
  const word = (text: string, x0: number, y0: number, x1: number, y1: number) => ({
    text,
    bbox: { x0, y0, x1, y1 },
  });
  const line = (...words: ReturnType<typeof word>[]) => ({
    words,
    bbox: {
      x0: Math.min(...words.map((w) => w.bbox.x0)),
      y0: Math.min(...words.map((w) => w.bbox.y0)),
      x1: Math.max(...words.map((w) => w.bbox.x1)),
      y1: Math.max(...words.map((w) => w.bbox.y1)),
    },
  });
  const texts = (blocks: ReturnType<typeof withWords>) =>
    blocks.map((block) =>
      block.paragraphs.flatMap((p) => p.lines.map((l) => l.words.map((w) => w.text).join(" "))),
    );

  it("puts each word on the line it overlaps most, in order along it; a word on no line gets a block placed by its top", () => {
    const page = [
      {
        paragraphs: [
          { lines: [line(word("Introduction", 10, 10, 120, 30)), line(word("Setup", 10, 50, 70, 70))] },
        ],
      },
      { paragraphs: [{ lines: [line(word("Appendix", 10, 200, 90, 220))] }] },
    ];
    const merged = withWords(page, [
      word("4", 300, 52, 312, 72), // on Setup's line (overlap 18 of 20)
      word("1", 300, 12, 310, 30), // on Introduction's line
      word("Notes", 0, 120, 50, 140), // on no line: between the two blocks
      word("a", 130, 8, 140, 30), // on Introduction's line too, before "1"
    ]);
    expect(texts(merged)).toEqual([["Introduction a 1", "Setup 4"], ["Notes"], ["Appendix"]]);
    // The line's box takes in its new words.
    expect(merged[0]!.paragraphs[0]!.lines[0]!.bbox).toEqual({ x0: 10, y0: 10, x1: 310, y1: 30 });
    // Without words, the blocks are the page's own.
    expect(withWords(page, [])).toEqual(page);
  });
});
