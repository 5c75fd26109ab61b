/** The test groups of the TextExtractor suite: markdown, plain text, images without text, input formats, aborts, memory, concurrency. */
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { describe, expect, it, type TestContext } from "vitest";
import {
  characterErrorRate,
  NOTICE_DOCUMENT,
  normalizeForCer,
  parseMarkdownStructure,
  photoLikeImage,
  renderDocument,
} from "../fixtures/documents.js";
import { Colors, solidImage } from "../fixtures/images.js";
import type { ExtractorSuite } from "./text-extractor.js";

/** The non-empty, normalised lines of `text` (see `normalizeForCer`). */
const linesOf = (text: string) => normalizeForCer(text).split("\n").filter(Boolean);

export function describeMarkdown(suite: ExtractorSuite): void {
  const { state, readMemo, expectCer, maxCer } = suite;
  describe("markdown", () => {
    it(`reads the words of a document (CER <= ${maxCer})`, async () => {
      expectCer(await readMemo("markdown"), state.memo, "markdown");
    });

    it("keeps the structure: heading level, every list item, every table cell", async () => {
      const got = parseMarkdownStructure(await readMemo("markdown"));
      const expected = state.memo.structure;
      expect(got.headings, "headings (level and text)").toEqual(expected.headings);
      expect(got.bullets, "bullet items").toEqual(expected.bullets);
      expect(got.numbered, "numbered items").toEqual(expected.numbered);
      expect(got.tables, "table cells, header row first").toEqual(expected.tables);
      expect(got.paragraphs, "paragraphs").toHaveLength(expected.paragraphs.length);
      got.paragraphs.forEach((paragraph, index) => {
        const cer = characterErrorRate(paragraph, expected.paragraphs[index]!);
        expect(cer, `paragraph ${index + 1}: ${paragraph}`).toBeLessThanOrEqual(maxCer);
      });
    });
  });
}

export function describePlain(suite: ExtractorSuite): void {
  const { state, readMemo, expectCer, maxCer } = suite;
  describe("plain", () => {
    it(`reads the words of a document (CER <= ${maxCer})`, async () => {
      expectCer(await readMemo("plain"), state.memo, "plain");
    });

    it("keeps the line breaks of the document", async () => {
      const got = linesOf(await readMemo("plain"));
      const expected = linesOf(state.memo.plain);
      expect(got, `plain lines:\n${got.join("\n")}`).toHaveLength(expected.length);
      got.forEach((line, index) => {
        const cer = characterErrorRate(line, expected[index]!);
        // One wrong character in a short line is tolerated; a merged or split line is not.
        expect(cer, `line ${index + 1}: ${JSON.stringify(line)}`).toBeLessThanOrEqual(Math.max(maxCer, 0.1));
      });
    });

    it("carries no markdown markup that the source does not have", async () => {
      const content = await readMemo("plain");
      const source = linesOf(state.memo.plain);
      const got = linesOf(content);
      // Each check applies only when the source itself has no such text.
      const markup: [string, (line: string) => boolean][] = [
        ["a `#` heading", (line) => /^#{1,6}\s/.test(line)],
        ["a `-`, `*` or `+` list marker", (line) => /^[-*+]\s/.test(line)],
        ["a `|` table row", (line) => line.includes("|")],
        ["a `---` rule", (line) => /^[-:| ]*-{3,}[-:| ]*$/.test(line)],
        ["`**` or `__` emphasis", (line) => /\*\*|__/.test(line)],
        ["a code fence", (line) => line.startsWith("```")],
      ];
      for (const [what, matches] of markup) {
        if (source.some(matches)) continue;
        const offending = got.filter(matches);
        expect(offending, `plain text with ${what}`).toEqual([]);
      }
    });
  });
}

export function describeImagesWithoutText(suite: ExtractorSuite): void {
  const { extract, rawImage, expectNoText } = suite;
  describe("images without text", () => {
    it("answers no text for a blank white page", async () => {
      const image = await rawImage(await solidImage(900, 600, Colors.white, "jpeg"));
      expectNoText(await extract(image, "markdown"), "a blank white page");
    });

    it("answers no text for a plain colour", async () => {
      const image = await rawImage(await solidImage(640, 480, { r: 40, g: 90, b: 200, alpha: 1 }, "jpeg"));
      expectNoText(await extract(image, "plain"), "a plain blue image");
    });

    it("answers no text for a photo-like image (soft colour blobs and grain)", async () => {
      const image = await rawImage(await photoLikeImage(900, 600));
      expectNoText(await extract(image, "markdown"), "a photo-like image");
      expectNoText(await extract(image, "plain"), "a photo-like image");
    });

    it("reads a tiny image (8x8 and 1x1) without throwing or hanging", async () => {
      for (const [width, height] of [
        [8, 8],
        [1, 1],
      ] as const) {
        const image = await rawImage(await solidImage(width, height, Colors.grey, "jpeg"));
        for (const format of ["markdown", "plain"] as const) {
          expectNoText(await extract(image, format), `a ${width}x${height} grey image`);
        }
      }
    });
  });
}

export function describeInputFormats(suite: ExtractorSuite): void {
  const { imageOf, extract, expectCer, capabilities } = suite;
  describe("input formats", () => {
    it("reads a lower-quality JPEG (quality 60, 4:2:0 chroma)", async () => {
      const document = await renderDocument(NOTICE_DOCUMENT, { format: "jpeg", quality: 60 });
      expectCer(await extract(await imageOf(document), "plain"), document, "plain");
    });

    for (const format of ["png", "webp"] as const) {
      const transparent = format === "png";
      it(`reads ${format === "png" ? "a PNG with a transparent page" : "a WebP"}`, async (context: TestContext) => {
        if (!capabilities.extraInputFormats.includes(format)) {
          context.skip(`the port's ModelImage is JPEG and the adapter does not declare ${format} input`);
        }
        const document = await renderDocument(NOTICE_DOCUMENT, { format, transparent });
        expectCer(await extract(await imageOf(document), "plain"), document, "plain");
      });
    }
  });
}

export function declarationTests(suite: ExtractorSuite): void {
  const { state, current } = suite;
  it("declares the model it is called with and a sane image size limit", () => {
    const { models, defaultModel } = current();
    expect(state.model, "no model to call: pass `model` or declare one").not.toBe("");
    expect(models).toContain(state.model);
    if (defaultModel !== undefined) expect(models).toContain(defaultModel);
    const maxSide = current().maxImageSide?.(state.model);
    if (maxSide !== undefined) {
      expect(Number.isInteger(maxSide) && maxSide >= 256, `maxImageSide ${maxSide}`).toBe(true);
    }
  });
}

export function abortTests(suite: ExtractorSuite): void {
  const { state, current, imageOf, capabilities } = suite;
  it("rejects a call whose signal is already aborted", async (context: TestContext) => {
    if (!capabilities.abort) context.skip("the adapter does not support AbortSignal");
    const controller = new AbortController();
    controller.abort(new Error("client went away"));
    const outcome = await imageOf(state.notice).then((image) =>
      current()
        .extract({ model: state.model, image, format: "plain" }, { signal: controller.signal })
        .then(
          (content) => ({ resolved: content }),
          (error: unknown) => ({ rejected: error }),
        ),
    );
    expect(outcome, "an aborted call must reject").toHaveProperty("rejected");
  });
}

export function memoryTests(suite: ExtractorSuite): void {
  const { state, current, imageOf, expectCer } = suite;
  it("gives back all the memory it reserves from the host's budget, and ends the call when refused", async () => {
    // ModelCallOptions.reserveMemory: an adapter that reads pixels in the host's process tree
    // reserves what it needs; one that reads nothing locally (a remote model) may ignore it.
    const image = await imageOf(state.notice);
    let held = 0;
    let reservations = 0;
    const reserveMemory = async (bytes: number) => {
      expect(Number.isFinite(bytes) && bytes > 0, `reserves a positive byte count, got ${bytes}`).toBe(true);
      reservations += 1;
      held += bytes;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held -= bytes;
      };
    };
    expectCer(
      await current().extract({ model: state.model, image, format: "plain" }, { reserveMemory }),
      state.notice,
      "plain",
    );
    expect(held, "every reservation is released by the time the call settles").toBe(0);
    const refusal = new ImagePipelineError(ErrorCodes.OVERLOADED, "the budget is full");
    const refused = current()
      .extract(
        { model: state.model, image, format: "plain" },
        { reserveMemory: () => Promise.reject(refusal) },
      )
      .then(
        () => "resolved",
        (error: unknown) => error,
      );
    if (reservations > 0) expect(await refused, "a refused reservation ends the call with it").toBe(refusal);
    else expect(await refused, "an adapter that reserves nothing reads on").toBe("resolved");
  });
}

export function concurrencyTests(suite: ExtractorSuite): void {
  const { state, imageOf, extract, rawImage, expectCer, expectNoText } = suite;
  it("gives concurrent calls each their own document, in their own format", async () => {
    const blank = await rawImage(await solidImage(700, 500, Colors.white, "jpeg"));
    const [reportImage, noticeImage] = await Promise.all([imageOf(state.report), imageOf(state.notice)]);
    const [reportMarkdown, noticePlain, blankMarkdown] = await Promise.all([
      extract(reportImage, "markdown"),
      extract(noticeImage, "plain"),
      extract(blank, "markdown"),
    ]);
    expectCer(reportMarkdown, state.report, "markdown");
    expectCer(noticePlain, state.notice, "plain");
    expectNoText(blankMarkdown, "a blank page read alongside two documents");
    // Not the other call's text: far from the other document, and each in its own format.
    expect(characterErrorRate(reportMarkdown, state.notice.markdown)).toBeGreaterThan(0.5);
    expect(characterErrorRate(noticePlain, state.report.plain)).toBeGreaterThan(0.5);
    expect(parseMarkdownStructure(reportMarkdown).headings).toEqual(state.report.structure.headings);
    expect(noticePlain).not.toMatch(/^#/m);
  });
}
