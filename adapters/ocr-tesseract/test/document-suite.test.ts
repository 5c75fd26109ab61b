import {
  characterErrorRate,
  OCR_DOCUMENT_SUITE,
  parseMarkdownStructure,
  type RenderedDocument,
  renderDocument,
} from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stretchContrast } from "../src/contrast.js";
import { createTesseractTextExtractor } from "../src/index.js";
import { estimateLineHeight, scaleFor } from "../src/line-height.js";
import { eraseRules, findRules } from "../src/rules.js";

/**
 * The document suite: every document of {@link OCR_DOCUMENT_SUITE} (paragraphs in three
 * fonts, headings of three levels, bullet, nested and numbered lists, ruled and unruled tables of
 * 2 to 6 columns, a two-column page, photos of text with blur and up to 2° of rotation), each at
 * both of its sizes (1000 to 3000 px wide), rendered from known text and handed over as the core
 * hands it to a lossless provider (full-size PNG). Thresholds: mean markdown CER <= 0.02, no
 * document above 0.05, every table cell exact, every heading level and list item kept. Run with
 * both engines: tesseract.js (`wasm`) and the system's tesseract (`native`, Debian's 5.3 in CI,
 * which `.ci/run` installs), same traineddata, same pre-processing and layout step.
 */
const MAX_CER = 0.05;
const MAX_MEAN_CER = 0.02;

interface Reading {
  document: RenderedDocument;
  markdown: string;
  plain: string;
}

describe.each(["wasm", "native"] as const)(
  "OCR document suite (%s tesseract, both sizes of every document)",
  (engine) => {
    // The whole suite (84 calls) is submitted at once: room for all of them in the queue, and a
    // deadline that covers the batch, since it counts from each call, queueing included.
    const extractor = createTesseractTextExtractor({
      engine,
      workers: 2,
      maxQueued: 200,
      timeoutMs: 600_000,
    });
    const readings: Reading[] = [];
    const cases = OCR_DOCUMENT_SUITE.flatMap((entry) =>
      entry.scales.map((scale) => ({ entry, scale, key: `${entry.spec.name}@x${scale}` })),
    );

    beforeAll(async () => {
      const done = await Promise.all(
        cases.map(async ({ entry, scale }) => {
          const document = await renderDocument(entry.spec, { format: "png", scale, photo: entry.photo });
          const image = {
            data: document.data,
            mimeType: "image/png" as const,
            width: document.width,
            height: document.height,
          };
          const [markdown, plain] = await Promise.all([
            extractor.extract({ model: "tesseract", image, format: "markdown" }),
            extractor.extract({ model: "tesseract", image, format: "plain" }),
          ]);
          return { document, markdown, plain };
        }),
      );
      readings.push(...done);
    }, 600_000);
    afterAll(() => extractor.close());

    const reading = (index: number) => readings[index]!;

    it("covers at least 20 documents, 1000 to 3000 px wide", () => {
      expect(OCR_DOCUMENT_SUITE.length).toBeGreaterThanOrEqual(20);
      const widths = readings.map((entry) => entry.document.width);
      expect(Math.min(...widths)).toBeGreaterThanOrEqual(1000);
      expect(Math.max(...widths)).toBeLessThanOrEqual(3100);
      expect(Math.max(...widths)).toBeGreaterThanOrEqual(2800);
    });

    it(`markdown: mean character error rate <= ${MAX_MEAN_CER}`, () => {
      const rates = readings.map((entry) => characterErrorRate(entry.markdown, entry.document.markdown));
      const mean = rates.reduce((sum, rate) => sum + rate, 0) / rates.length;
      console.log(
        `OCR suite (${engine}): ${rates.length} readings, mean markdown CER ${mean.toFixed(4)}, max ${Math.max(...rates).toFixed(4)}`,
      );
      expect(mean).toBeLessThanOrEqual(MAX_MEAN_CER);
    });

    cases.forEach(({ key }, index) => {
      describe(key, () => {
        it(`markdown CER <= ${MAX_CER}`, () => {
          const { document, markdown } = reading(index);
          expect(characterErrorRate(markdown, document.markdown), markdown).toBeLessThanOrEqual(MAX_CER);
        });

        it(`plain CER <= ${MAX_CER}`, () => {
          const { document, plain } = reading(index);
          expect(characterErrorRate(plain, document.plain), plain).toBeLessThanOrEqual(MAX_CER);
        });

        it("every table cell exact; heading levels and list items kept", () => {
          const { document, markdown } = reading(index);
          const got = parseMarkdownStructure(markdown);
          const want = document.structure;
          expect(got.tables, markdown).toEqual(want.tables);
          expect(
            got.headings.map((heading) => heading.level),
            markdown,
          ).toEqual(want.headings.map((heading) => heading.level));
          expect(got.bullets.length, markdown).toBe(want.bullets.length);
          expect(
            got.numbered.map((item) => item.number),
            markdown,
          ).toEqual(want.numbered.map((item) => item.number));
        });
      });
    });
  },
);

/**
 * Pages whose body text is within 5 % of the wanted line height are not resampled, and neither
 * are their ruling lines: scaled by that small factor, a table's grid stood up to 5 % off its words
 * on a wide page (markdown CER up to 0.24 on these pages, cells merged). The
 * scales are ones where the suite's ruled tables land in that band (three shrunk by 0.952, which
 * failed before, one enlarged by 1.026); the band is checked first.
 */
describe.each(["wasm", "native"] as const)("ruled tables on pages not resampled (%s)", (engine) => {
  const extractor = createTesseractTextExtractor({ engine, workers: 1, timeoutMs: 300_000 });
  afterAll(() => extractor.close());

  it.each([
    ["ruled-3col-serif", 2.78],
    ["ruled-multiword", 2.82],
    ["ruled-4x5", 2.78],
    ["ruled-4x5", 2.56],
  ] as const)(
    "%s at x%s: every cell exact",
    async (name, scale) => {
      const entry = OCR_DOCUMENT_SUITE.find((candidate) => candidate.spec.name === name)!;
      const document = await renderDocument(entry.spec, { format: "png", scale });
      const { data, info } = await sharp(document.data)
        .flatten({ background: "#ffffff" })
        .toColourspace("b-w")
        .raw()
        .toBuffer({ resolveWithObject: true });
      const grey = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      stretchContrast(grey, 0.02, 0.99);
      eraseRules(grey, info.width, info.height, findRules(grey, info.width, info.height));
      const factor = scaleFor(estimateLineHeight(grey, info.width, info.height)!);
      expect(Math.abs(factor - 1)).toBeGreaterThan(0);
      expect(Math.abs(factor - 1)).toBeLessThanOrEqual(0.05);
      const image = {
        data: document.data,
        mimeType: "image/png" as const,
        width: document.width,
        height: document.height,
      };
      const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
      expect(parseMarkdownStructure(markdown).tables, markdown).toEqual(document.structure.tables);
      expect(characterErrorRate(markdown, document.markdown), markdown).toBeLessThanOrEqual(MAX_CER);
    },
    300_000,
  );
});
