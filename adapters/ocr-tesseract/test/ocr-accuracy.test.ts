import {
  characterErrorRate,
  parseMarkdownStructure,
  REPORT_DOCUMENT,
  type RenderedDocument,
  renderDocument,
} from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTesseractTextExtractor } from "../src/index.js";

/**
 * Accuracy: a generated document (heading, two paragraphs, a bullet list, a numbered
 * list, a 3x3 table; DejaVu Sans rendered by librsvg, JPEG as the core sends it) read by the real
 * tesseract extractor. The markdown must be within 2 % character error rate of the source
 * markdown with the same structure; the plain text within 2 % of the source plain text.
 */
const MAX_CER = 0.02;

describe("OCR accuracy on a generated document (tesseract)", () => {
  const extractor = createTesseractTextExtractor({ workers: 1 });
  let document: RenderedDocument;
  let markdown: string;
  let plain: string;

  beforeAll(async () => {
    document = await renderDocument(REPORT_DOCUMENT, { format: "jpeg", quality: 85 });
    const image = {
      data: document.data,
      mimeType: "image/jpeg" as const,
      width: document.width,
      height: document.height,
    };
    markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
    plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
  });
  afterAll(() => extractor.close());

  it(`markdown: character error rate against the source markdown <= ${MAX_CER}`, () => {
    const cer = characterErrorRate(markdown, document.markdown);
    console.log(
      `OCR markdown CER ${cer.toFixed(4)} (${document.markdown.length} source characters, ${document.width}x${document.height} JPEG)`,
    );
    expect(cer, `markdown:\n${markdown}`).toBeLessThanOrEqual(MAX_CER);
  });

  it("markdown: the heading keeps its level and text", () => {
    const { headings } = parseMarkdownStructure(markdown);
    expect(headings).toEqual([{ level: 1, text: "Quarterly Report" }]);
    expect(markdown.split("\n")[0]).toBe("# Quarterly Report");
  });

  it("markdown: every bullet and numbered item, in order", () => {
    const structure = parseMarkdownStructure(markdown);
    expect(structure.bullets).toEqual([
      "Apples arrive on Monday",
      "Pears arrive on Tuesday",
      "Plums arrive on Friday",
    ]);
    expect(structure.numbered).toEqual([
      { number: 1, text: "Open the crate" },
      { number: 2, text: "Count the fruit" },
      { number: 3, text: "Sign the delivery note" },
    ]);
    expect(structure).toMatchObject({
      bullets: document.structure.bullets,
      numbered: document.structure.numbered,
    });
  });

  it("markdown: one 3x3 table with every cell, header first", () => {
    const { tables } = parseMarkdownStructure(markdown);
    expect(tables).toEqual([
      [
        ["Fruit", "Price", "Stock"],
        ["Apple", "120", "40"],
        ["Pear", "90", "12"],
      ],
    ]);
    expect(markdown).toContain("| --- | --- | --- |");
  });

  it("markdown: both paragraphs, each its lines joined", () => {
    const { paragraphs } = parseMarkdownStructure(markdown);
    expect(paragraphs).toHaveLength(2);
    paragraphs.forEach((paragraph, index) => {
      expect(characterErrorRate(paragraph, document.structure.paragraphs[index]!)).toBeLessThanOrEqual(
        MAX_CER,
      );
    });
  });

  it(`plain: character error rate against the source plain text <= ${MAX_CER}, with its line breaks`, () => {
    const cer = characterErrorRate(plain, document.plain);
    console.log(`OCR plain CER ${cer.toFixed(4)} (${document.plain.length} source characters)`);
    expect(cer, `plain:\n${plain}`).toBeLessThanOrEqual(MAX_CER);
    const lines = plain.split("\n").filter((line) => line.trim() !== "");
    expect(lines).toHaveLength(document.plain.split("\n").filter((line) => line.trim() !== "").length);
    expect(lines).toContain("Quarterly Report");
    expect(lines).toContain("• Apples arrive on Monday");
    expect(lines).toContain("2. Count the fruit");
    expect(lines).toContain("Apple 120 40");
  });

  it("plain: no markdown markup", () => {
    expect(plain).not.toMatch(/^#|^[-*+] |\||---/m);
  });

  it("markdown at half size (10 px body text, upscaled by the adapter): same structure, CER <= 0.02", async () => {
    const width = Math.round(document.width / 2);
    const height = Math.round(document.height / 2);
    const data = await sharp(document.data).resize(width, height).jpeg({ quality: 85 }).toBuffer();
    const small = await extractor.extract({
      model: "tesseract",
      image: { data: new Uint8Array(data), mimeType: "image/jpeg", width, height },
      format: "markdown",
    });
    const cer = characterErrorRate(small, document.markdown);
    console.log(`OCR markdown CER at half size ${cer.toFixed(4)} (${width}x${height} JPEG)`);
    expect(cer, `markdown:\n${small}`).toBeLessThanOrEqual(MAX_CER);
    expect(parseMarkdownStructure(small)).toEqual(document.structure);
  });
});

describe("the measure (characterErrorRate, parseMarkdownStructure)", () => {
  it("counts substitutions, insertions, deletions, case, line breaks and lost markup", () => {
    expect(characterErrorRate("Open crate", "Open crate")).toBe(0);
    expect(characterErrorRate("Open crute", "Open crate")).toBeCloseTo(1 / 10);
    expect(characterErrorRate("open crate", "Open crate")).toBeCloseTo(1 / 10);
    expect(characterErrorRate("Open the crate", "Open crate")).toBeCloseTo(4 / 10);
    expect(characterErrorRate("Open", "Open crate")).toBeCloseTo(6 / 10);
    expect(characterErrorRate("a b", "a\nb")).toBeCloseTo(1 / 3);
    expect(characterErrorRate("Title", "# Title")).toBeCloseTo(2 / 7);
    expect(characterErrorRate("", "")).toBe(0);
    expect(characterErrorRate("x", "")).toBe(1);
    expect(characterErrorRate("", "abc")).toBe(1);
  });

  it("ignores only runs of spaces, line-end spaces, blank lines and CRLF", () => {
    expect(characterErrorRate("a  b \r\n\r\n\n c\t", "a b\nc")).toBe(0);
    expect(characterErrorRate("a b\n\nc", "a b\nc")).toBe(0);
  });

  it("reads headings, items, tables and paragraphs", () => {
    const structure = parseMarkdownStructure(
      [
        "## Title ##",
        "",
        "First line",
        "second line",
        "",
        "- one",
        "* two",
        "1) three",
        "2. four",
        "",
        "| a | b \\| c |",
        "|:---|---:|",
        "| 1 | 2 |",
        "after",
      ].join("\n"),
    );
    expect(structure).toEqual({
      headings: [{ level: 2, text: "Title" }],
      paragraphs: ["First line second line", "after"],
      bullets: ["one", "two"],
      numbered: [
        { number: 1, text: "three" },
        { number: 2, text: "four" },
      ],
      tables: [
        [
          ["a", "b | c"],
          ["1", "2"],
        ],
      ],
    });
  });
});
