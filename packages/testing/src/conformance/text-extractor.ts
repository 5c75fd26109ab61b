import type { ModelImage, TextExtractor, TextFormat } from "@pixport/core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect } from "vitest";
import {
  characterErrorRate,
  documentText,
  identifyDocument,
  MEMO_DOCUMENT,
  NOTICE_DOCUMENT,
  REPORT_DOCUMENT,
  type RenderedDocument,
  renderDocument,
} from "../fixtures/documents.js";
import {
  abortTests,
  concurrencyTests,
  declarationTests,
  describeImagesWithoutText,
  describeInputFormats,
  describeMarkdown,
  describePlain,
  memoryTests,
} from "./text-extractor-groups.js";

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

/** A placeholder until the suite's documents are rendered (before its first test). */
const NOT_RENDERED = undefined as unknown as RenderedDocument;

/** The capabilities with the suite's defaults applied. */
export type ResolvedCapabilities = Required<TextExtractorConformanceCapabilities>;

/** What the suite sets up before its first test. */
export interface ExtractorState<T extends TextExtractor> {
  extractor: T | undefined;
  model: string;
  memo: RenderedDocument;
  report: RenderedDocument;
  notice: RenderedDocument;
  documents: RenderedDocument[];
}

/** What the suite's test groups share: its state, the running extractor, calls and checks. */
export interface ExtractorSuite {
  state: ExtractorState<TextExtractor>;
  current: () => TextExtractor;
  capabilities: ResolvedCapabilities;
  maxCer: number;
  /** The image the core would send for `document`. */
  imageOf: (document: RenderedDocument) => Promise<ModelImage>;
  /** One extraction; checks that it resolves a string. */
  extract: (image: ModelImage, format: TextFormat) => Promise<string>;
  /** Encoded JPEG bytes as a model image. */
  rawImage: (data: Uint8Array) => Promise<ModelImage>;
  /** The memo read once per format, shared by the tests that read it. */
  readMemo: (format: TextFormat) => Promise<string>;
  /** Expects `content` within the suite's character error rate of `document`'s text in `format`. */
  expectCer: (content: string, document: RenderedDocument, format: TextFormat) => void;
  /** Expects no text where the adapter promises it (`emptyWithoutText`). */
  expectNoText: (content: string, what: string) => void;
}

/** The image the core would send: the bytes as they are when they fit the model's size limit. */
async function modelImageOf(
  extractor: TextExtractor,
  model: string,
  document: RenderedDocument,
): Promise<ModelImage> {
  if (extractor.lossless === true) {
    // Mirrors the core for lossless providers: the full-size pixels as PNG.
    const { data, info } = await sharp(document.data).png().toBuffer({ resolveWithObject: true });
    return { data: new Uint8Array(data), mimeType: "image/png", width: info.width, height: info.height };
  }
  const maxSide = extractor.maxImageSide?.(model);
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
}

/** The suite's shared calls and checks over the running extractor. */
function checkHelpers(
  state: ExtractorState<TextExtractor>,
  current: () => TextExtractor,
  capabilities: ResolvedCapabilities,
  maxCer: number,
): Pick<ExtractorSuite, "imageOf" | "extract" | "rawImage" | "readMemo" | "expectCer" | "expectNoText"> {
  const imageOf = (document: RenderedDocument) => modelImageOf(current(), state.model, document);
  const extract = async (image: ModelImage, format: TextFormat) => {
    const content = await current().extract({ model: state.model, image, format });
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
      pending = imageOf(state.memo).then((image) => extract(image, format));
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

  return { imageOf, extract, rawImage, readMemo, expectCer, expectNoText };
}

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
    const state: ExtractorState<T> = {
      extractor: undefined,
      model: "",
      memo: NOT_RENDERED,
      report: NOT_RENDERED,
      notice: NOT_RENDERED,
      documents: [],
    };
    const current = (): T => {
      if (state.extractor === undefined) throw new Error("The extractor exists only while the suite runs.");
      return state.extractor;
    };

    beforeAll(async () => {
      [state.memo, state.report, state.notice] = await Promise.all([
        renderDocument(MEMO_DOCUMENT),
        renderDocument(REPORT_DOCUMENT),
        renderDocument(NOTICE_DOCUMENT),
      ]);
      state.documents = [state.memo, state.report, state.notice];
      const context: TextExtractorConformanceContext = {
        documents: state.documents,
        async transcribe(image, format) {
          const document = await identifyDocument(image, state.documents);
          return document === undefined ? "" : documentText(document, format);
        },
      };
      state.extractor = await options.create(context);
      state.model = options.model ?? state.extractor.defaultModel ?? state.extractor.models[0] ?? "";
    });
    afterAll(async () => {
      if (state.extractor !== undefined) await options.close?.(state.extractor);
      state.extractor = undefined;
    });

    const suite: ExtractorSuite = {
      state,
      current,
      capabilities,
      maxCer,
      ...checkHelpers(state, current, capabilities, maxCer),
    };

    declarationTests(suite);
    describeMarkdown(suite);
    describePlain(suite);
    describeImagesWithoutText(suite);
    describeInputFormats(suite);
    abortTests(suite);
    memoryTests(suite);
    concurrencyTests(suite);

    options.extraTests?.({
      get extractor() {
        return current();
      },
      get model() {
        return state.model;
      },
      get documents() {
        return state.documents;
      },
    });
  });
}
