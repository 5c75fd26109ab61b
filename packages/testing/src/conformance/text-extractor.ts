import {
  ErrorCodes,
  ImagePipelineError,
  type ModelImage,
  type TextExtractor,
  type TextFormat,
} from "@pixport/core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import {
  characterErrorRate,
  documentText,
  identifyDocument,
  MEMO_DOCUMENT,
  NOTICE_DOCUMENT,
  normalizeForCer,
  parseMarkdownStructure,
  photoLikeImage,
  REPORT_DOCUMENT,
  type RenderedDocument,
  renderDocument,
} from "../fixtures/documents.js";
import { Colors, solidImage } from "../fixtures/images.js";

/** What a TextExtractor adapter declares about itself; a gap skips the matching tests with its reason. */
export interface TextExtractorConformanceCapabilities {
  /**
   * Whether a call whose `AbortSignal` is already aborted rejects. Both shipped adapters do.
   * @default true
   */
  abort?: boolean;
  /**
   * Whether an image without text (a blank page, a plain colour, a photo-like image, a tiny image)
   * is answered with an empty or whitespace-only string, as the port requires. An adapter whose
   * model cannot promise that (a generative model may describe a photo) sets `false`: those tests
   * then only check that the call resolves to a string and does not hang.
   * @default true
   */
  emptyWithoutText?: boolean;
  /**
   * Encoded formats the adapter reads besides JPEG. The port's `ModelImage` is a JPEG (the core
   * re-encodes every image before a model sees it), so only JPEG is required; an adapter that is
   * also used directly with PNG (here with a transparent page) or WebP bytes declares them, and
   * the suite sends those bytes with their own `mimeType`.
   * @default []
   */
  extraInputFormats?: readonly ("png" | "webp")[];
}

/** What the suite hands to `create`: its documents and the reference answer for an image. */
export interface TextExtractorConformanceContext {
  /** The JPEG renders the suite sends (other formats are renders of the same specs). */
  readonly documents: readonly RenderedDocument[];
  /**
   * The correct answer for `image` (encoded bytes of any format sharp reads): the source text in
   * `format` of the suite document the image shows, identified by its pixels
   * ({@link identifyDocument}), or `""` when it shows none of them (a blank page, a photo, a tiny
   * image). For adapters whose model side is a test stand-in (a loopback OpenAI-compatible
   * server): the answer depends on the image that really arrived, so the suite's assertions check
   * the adapter's plumbing (image bytes out, the right format asked for, the answer back to the
   * right caller), not a model's skill. An OCR adapter ignores it.
   */
  transcribe(image: Uint8Array, format: TextFormat): Promise<string>;
}

/** The running suite's extractor, for {@link TextExtractorConformanceOptions.extraTests}. */
export interface TextExtractorTestContext<T extends TextExtractor> {
  /** The created extractor (read it inside `it`). */
  readonly extractor: T;
  /** The model name the suite calls. */
  readonly model: string;
  readonly documents: readonly RenderedDocument[];
}

/** Options of {@link describeTextExtractorConformance}. */
export interface TextExtractorConformanceOptions<T extends TextExtractor = TextExtractor> {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Creates the extractor under test, once per suite, after the documents are rendered. */
  create: (context: TextExtractorConformanceContext) => T | Promise<T>;
  /** Releases what `create` made (workers, servers); called once after the suite. */
  close?: (extractor: T) => void | Promise<void>;
  /** Model name to call. @default the extractor's `defaultModel`, else its first model */
  model?: string;
  capabilities?: TextExtractorConformanceCapabilities;
  /**
   * Highest character error rate ({@link characterErrorRate}) accepted against the source text,
   * for markdown against the source markdown and for plain against the source plain.
   * @default 0.02
   */
  maxCharacterErrorRate?: number;
  /** Adapter-specific tests registered inside the suite. */
  extraTests?: (context: TextExtractorTestContext<T>) => void;
}

/** The non-empty, normalised lines of `text` (see `normalizeForCer`). */
const linesOf = (text: string) => normalizeForCer(text).split("\n").filter(Boolean);

/**
 * Runs the TextExtractor conformance suite on generated documents (`fixtures/documents.ts`):
 * - markdown and plain come back within `maxCharacterErrorRate` of the source text, and the
 *   markdown keeps the structure (heading level, every list item, every table cell);
 * - plain text keeps its line breaks and carries no markdown markup the source does not have;
 * - images without text answer an empty string; a tiny image neither throws nor hangs;
 * - JPEG input (and the PNG / WebP the adapter declares) works; an already-aborted signal
 *   rejects; concurrent calls each get their own document's text, in their own format.
 *
 * The text checks are the same for an OCR engine and for an LLM adapter talking to a stand-in
 * model; see {@link TextExtractorConformanceContext.transcribe} for what they then prove.
 *
 * @example
 * ```ts
 * describeTextExtractorConformance({
 *   name: "tesseract",
 *   create: () => createTesseractTextExtractor({ workers: 2 }),
 *   close: (extractor) => extractor.close(),
 * });
 * ```
 */
export function describeTextExtractorConformance<T extends TextExtractor>(
  options: TextExtractorConformanceOptions<T>,
): void {
  const capabilities = {
    abort: true,
    emptyWithoutText: true,
    extraInputFormats: [] as readonly ("png" | "webp")[],
    ...options.capabilities,
  };
  const maxCer = options.maxCharacterErrorRate ?? 0.02;

  describe(`TextExtractor conformance: ${options.name}`, () => {
    let extractor: T | undefined;
    let model = "";
    let memo: RenderedDocument;
    let report: RenderedDocument;
    let notice: RenderedDocument;
    let documents: RenderedDocument[] = [];

    const current = (): T => {
      if (extractor === undefined) throw new Error("The extractor exists only while the suite runs.");
      return extractor;
    };

    /** The image the core would send: the bytes as they are when they fit the model's size limit. */
    const imageOf = async (document: RenderedDocument): Promise<ModelImage> => {
      if (current().lossless === true) {
        // Mirrors the core for lossless providers: the full-size pixels as PNG.
        const { data, info } = await sharp(document.data).png().toBuffer({ resolveWithObject: true });
        return { data: new Uint8Array(data), mimeType: "image/png", width: info.width, height: info.height };
      }
      const maxSide = current().maxImageSide?.(model);
      if (maxSide !== undefined && Math.max(document.width, document.height) > maxSide) {
        // Mirrors the core's prepareModelImage: downscale, flatten onto white, JPEG quality 85.
        const { data, info } = await sharp(document.data)
          .resize(maxSide, maxSide, { fit: "inside" })
          .flatten({ background: "#ffffff" })
          .jpeg({ quality: 85 })
          .toBuffer({ resolveWithObject: true });
        return { data: new Uint8Array(data), mimeType: "image/jpeg", width: info.width, height: info.height };
      }
      // PNG and WebP only reach adapters that declare them (extraInputFormats); the port type is JPEG.
      return {
        data: document.data,
        mimeType: document.mimeType,
        width: document.width,
        height: document.height,
      } as ModelImage;
    };

    const extract = async (image: ModelImage, format: TextFormat) => {
      const content = await current().extract({ model, image, format });
      expect(typeof content, "the extractor resolves a string").toBe("string");
      return content;
    };

    const rawImage = async (data: Uint8Array): Promise<ModelImage> => {
      const { width, height } = await sharp(data).metadata();
      return { data, mimeType: "image/jpeg", width: width ?? 0, height: height ?? 0 };
    };

    /** One extraction of the memo document per format, shared by the tests that read it. */
    const memoReads = new Map<TextFormat, Promise<string>>();
    const readMemo = (format: TextFormat) => {
      let pending = memoReads.get(format);
      if (pending === undefined) {
        pending = imageOf(memo).then((image) => extract(image, format));
        memoReads.set(format, pending);
      }
      return pending;
    };

    const expectCer = (content: string, document: RenderedDocument, format: TextFormat) => {
      const reference = documentText(document, format);
      const cer = characterErrorRate(content, reference);
      expect(
        cer,
        `CER ${cer.toFixed(4)} of the ${format} of "${document.name}" (${document.format}) above ${maxCer}:\n` +
          `--- got\n${content}\n--- expected\n${reference}`,
      ).toBeLessThanOrEqual(maxCer);
    };

    const expectNoText = (content: string, what: string) => {
      if (capabilities.emptyWithoutText) {
        expect(
          content.trim(),
          `${what} has no text, but the extractor answered ${JSON.stringify(content)}`,
        ).toBe("");
      }
    };

    beforeAll(async () => {
      [memo, report, notice] = await Promise.all([
        renderDocument(MEMO_DOCUMENT),
        renderDocument(REPORT_DOCUMENT),
        renderDocument(NOTICE_DOCUMENT),
      ]);
      documents = [memo, report, notice];
      const context: TextExtractorConformanceContext = {
        documents,
        async transcribe(image, format) {
          const document = await identifyDocument(image, documents);
          return document === undefined ? "" : documentText(document, format);
        },
      };
      extractor = await options.create(context);
      model = options.model ?? extractor.defaultModel ?? extractor.models[0] ?? "";
    });
    afterAll(async () => {
      if (extractor !== undefined) await options.close?.(extractor);
      extractor = undefined;
    });

    it("declares the model it is called with and a sane image size limit", () => {
      const { models, defaultModel } = current();
      expect(model, "no model to call: pass `model` or declare one").not.toBe("");
      expect(models).toContain(model);
      if (defaultModel !== undefined) expect(models).toContain(defaultModel);
      const maxSide = current().maxImageSide?.(model);
      if (maxSide !== undefined) {
        expect(Number.isInteger(maxSide) && maxSide >= 256, `maxImageSide ${maxSide}`).toBe(true);
      }
    });

    describe("markdown", () => {
      it(`reads the words of a document (CER <= ${maxCer})`, async () => {
        expectCer(await readMemo("markdown"), memo, "markdown");
      });

      it("keeps the structure: heading level, every list item, every table cell", async () => {
        const got = parseMarkdownStructure(await readMemo("markdown"));
        const expected = memo.structure;
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

    describe("plain", () => {
      it(`reads the words of a document (CER <= ${maxCer})`, async () => {
        expectCer(await readMemo("plain"), memo, "plain");
      });

      it("keeps the line breaks of the document", async () => {
        const got = linesOf(await readMemo("plain"));
        const expected = linesOf(memo.plain);
        expect(got, `plain lines:\n${got.join("\n")}`).toHaveLength(expected.length);
        got.forEach((line, index) => {
          const cer = characterErrorRate(line, expected[index]!);
          // One wrong character in a short line is tolerated; a merged or split line is not.
          expect(cer, `line ${index + 1}: ${JSON.stringify(line)}`).toBeLessThanOrEqual(
            Math.max(maxCer, 0.1),
          );
        });
      });

      it("carries no markdown markup that the source does not have", async () => {
        const content = await readMemo("plain");
        const source = linesOf(memo.plain);
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

    it("rejects a call whose signal is already aborted", async (context: TestContext) => {
      if (!capabilities.abort) context.skip("the adapter does not support AbortSignal");
      const controller = new AbortController();
      controller.abort(new Error("client went away"));
      const outcome = await imageOf(notice).then((image) =>
        current()
          .extract({ model, image, format: "plain" }, { signal: controller.signal })
          .then(
            (content) => ({ resolved: content }),
            (error: unknown) => ({ rejected: error }),
          ),
      );
      expect(outcome, "an aborted call must reject").toHaveProperty("rejected");
    });

    it("gives back all the memory it reserves from the host's budget, and ends the call when refused", async () => {
      // ModelCallOptions.reserveMemory: an adapter that reads pixels in the host's process tree
      // reserves what it needs; one that reads nothing locally (a remote model) may ignore it.
      const image = await imageOf(notice);
      let held = 0;
      let reservations = 0;
      const reserveMemory = async (bytes: number) => {
        expect(Number.isFinite(bytes) && bytes > 0, `reserves a positive byte count, got ${bytes}`).toBe(
          true,
        );
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
        await current().extract({ model, image, format: "plain" }, { reserveMemory }),
        notice,
        "plain",
      );
      expect(held, "every reservation is released by the time the call settles").toBe(0);
      const refusal = new ImagePipelineError(ErrorCodes.OVERLOADED, "the budget is full");
      const refused = current()
        .extract({ model, image, format: "plain" }, { reserveMemory: () => Promise.reject(refusal) })
        .then(
          () => "resolved",
          (error: unknown) => error,
        );
      if (reservations > 0)
        expect(await refused, "a refused reservation ends the call with it").toBe(refusal);
      else expect(await refused, "an adapter that reserves nothing reads on").toBe("resolved");
    });

    it("gives concurrent calls each their own document, in their own format", async () => {
      const blank = await rawImage(await solidImage(700, 500, Colors.white, "jpeg"));
      const [reportImage, noticeImage] = await Promise.all([imageOf(report), imageOf(notice)]);
      const [reportMarkdown, noticePlain, blankMarkdown] = await Promise.all([
        extract(reportImage, "markdown"),
        extract(noticeImage, "plain"),
        extract(blank, "markdown"),
      ]);
      expectCer(reportMarkdown, report, "markdown");
      expectCer(noticePlain, notice, "plain");
      expectNoText(blankMarkdown, "a blank page read alongside two documents");
      // Not the other call's text: far from the other document, and each in its own format.
      expect(characterErrorRate(reportMarkdown, notice.markdown)).toBeGreaterThan(0.5);
      expect(characterErrorRate(noticePlain, report.plain)).toBeGreaterThan(0.5);
      expect(parseMarkdownStructure(reportMarkdown).headings).toEqual(report.structure.headings);
      expect(noticePlain).not.toMatch(/^#/m);
    });

    options.extraTests?.({
      get extractor() {
        return current();
      },
      get model() {
        return model;
      },
      get documents() {
        return documents;
      },
    });
  });
}
