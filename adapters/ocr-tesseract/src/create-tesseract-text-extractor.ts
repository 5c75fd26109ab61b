import { rm } from "node:fs/promises";
import { availableParallelism } from "node:os";
import type { MemoryReleaser, ModelCallOptions, ModelImage, TextExtractor, TextFormat } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { layoutToMarkdown, layoutToPlain } from "./layout.js";
import { checkNativeTesseract, nativeReader } from "./native-engine.js";
import { createReaderPool } from "./reader-pool.js";
import { createRecognizer } from "./recognizer.js";
import { RESIDENT_IDLE_MS } from "./resident-tesseract.js";
import { defaultLangPath, unpackTraineddata } from "./traineddata.js";
import { limitWasmCompilation, startWasmReader } from "./wasm-engine.js";

/** The tesseract an extractor reads with (what its `engine` option chose). */
export type TesseractEngine = "wasm" | "native";

/** The API-visible model name of the embedded extractor. */
export const TESSERACT_MODEL = "tesseract";

/** Options of {@link createTesseractTextExtractor}; every field has a default (unknown keys are refused). */
export const tesseractTextExtractorOptionsSchema = z
  .object({
    /**
     * Workers created on first use, at most this many (each a tesseract.js worker thread of about 70
     * MB, or a native `tesseract` process of 40-70 MB: see `engine`).
     * @default half the available cores, at least 1, at most 4
     */
    workers: z.number().int().min(1).max(64).optional(),
    /**
     * Deadline of one extraction from the call to the answer, queueing included; a recognition
     * still running at it has its worker terminated and replaced. @default 60000
     */
    timeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
    /**
     * A worker unused this long is closed and its memory given back: a tesseract.js worker's thread
     * (its V8 isolate, compiled engine and WebAssembly memory, about 70 MB), a native worker's
     * resident process. The next call starts a new one (about 0.4-0.7 s for tesseract.js, 0.1 s
     * for the native engine). @default 30000
     */
    idleMs: z.number().int().positive().max(86_400_000).default(RESIDENT_IDLE_MS),
    /**
     * Calls waiting for a worker beyond the running ones; one more is refused at once with 503
     * `OCR_AT_CAPACITY` (Retry-After), so a burst cannot queue for minutes. @default 4 x workers
     */
    maxQueued: z.number().int().nonnegative().max(10_000).optional(),
    /**
     * Pages where no text line can be measured (see `estimateLineHeight`) and whose longest side is
     * below this are upscaled to it. Pages with text are scaled by their text's line height instead.
     * @default 1600
     */
    upscaleBelow: z.number().int().positive().max(10_000).default(1600),
    /**
     * Most pixels of the page tesseract is given (the scaled part with ink). A page whose text
     * would need more (a large scan of small print, scaled up to the text size wanted) is scaled
     * less, so that the memory of reading it (`READ_BYTES_PER_PIXEL`: 8 bytes a pixel with
     * the native engine, 16 with tesseract.js) stays bounded: 16 MP holds a 300 dpi A4 page at its
     * own size with room, and costs about 130 MB (native) or 260 MB (tesseract.js) to read. Text on
     * a larger page is read at a smaller size than the engine reads best.
     * @default 16000000
     */
    maxPagePixels: z.number().int().min(250_000).max(200_000_000).default(16_000_000),
    /** Layout tuning of the markdown converter. */
    layout: z
      .object({
        /** A line this many times the body text height (or more) is a heading. @default 1.3 */
        headingRatio: z.number().positive().optional(),
        /** A horizontal gap of at least this many line heights separates table cells. @default 1.2 */
        cellGap: z.number().positive().optional(),
      })
      .strict()
      .optional(),
    /**
     * Which tesseract reads the page. `auto` (the default): `native` when the `tesseract` executable
     * (`tesseractPath`) runs and is version 4 or later, else `wasm`; checked once when the extractor is
     * created, and the choice is the extractor's `engine`. `wasm`: tesseract.js, nothing to install, each
     * worker a thread with a V8 isolate and the WebAssembly engine compiled in it (about 70 MB when ready;
     * its WebAssembly memory is 19-25 MB of that on 1000-3000 px pages; see `idleMs` and
     * `wasmCompilationTasks`). `native`: the
     * system's `tesseract` executable (4 or later; Debian: `apt-get install tesseract-ocr`), and an error
     * when it cannot run: per worker one resident process (started on first use) that reads pages and their
     * ruled-table regions (a zone file makes it read a table as one block), one thread, reading the
     * traineddata unpacked once into a private temporary directory, with the model loaded once, about 40-70
     * MB; a process ends after `idleMs` without a page (its memory goes back) and is killed with a page whose
     * caller gave up. Both engines feed the same pre-processing and layout step; `native` is the faster and
     * lighter one (BENCHMARKS.md, "OCR"), which is why `auto` prefers it. @default "auto"
     */
    engine: z.enum(["auto", "wasm", "native"]).default("auto"),
    /**
     * With the `wasm` engine: V8's `--wasm-num-compilation-tasks`, set for the whole process (V8's
     * flags are per process) before the first tesseract.js worker starts, unless the host's command
     * line sets it. V8 compiles the engine's hot functions again with its optimising compiler while
     * the first pages are read, by default on up to 4 threads at once, each compilation holding tens
     * of MB: the library's process peaked at 200-213 MB during its first page on V8's default, 170-182
     * MB with 1 (BENCHMARKS.md, "OCR"). The optimised code is the same, it is done
     * on one thread (so over the first few pages instead of the first one); only WebAssembly
     * compilation is affected (the host's own WebAssembly modules are compiled on this many
     * threads too). `0` leaves V8's setting alone. @default 1
     */
    wasmCompilationTasks: z.number().int().min(0).max(128).default(1),
    /**
     * The cap on malloc's arenas that {@link TesseractTextExtractorOptions.limitMallocArenas} is
     * called with when the extractor is created. A page is decoded and scaled by libvips on libuv's
     * and libvips' threads, each of which otherwise gets an arena of its own that keeps what its
     * largest page left. Reading the OCR suite page after page as a library, the process peaked at
     * 179-183 MB with a cap of 2, 192-211 MB without, at the same speed; with `MALLOC_ARENA_MAX=2` in
     * the host's environment from its start, 165 MB (BENCHMARKS.md, "OCR"). Arenas made before the
     * cap stay, and once glibc has made more than 8 the cap no longer takes: create the extractor
     * before the host's first image jobs, or set `MALLOC_ARENA_MAX=2` in its environment. `0` leaves
     * glibc alone (the prebuilt server passes it: its launcher sets the allocator, and two arenas
     * cost the resize load 4-10 % of its throughput). Without `limitMallocArenas` nothing is capped.
     * @default 2
     */
    mallocArenas: z.number().int().min(0).max(1024).default(2),
    /**
     * What caps malloc's arenas for the whole process at `mallocArenas` (when that is above 0), called
     * once when the extractor is created: `limitMallocArenas` from `@pixport/allocator` (glibc's
     * `mallopt(M_ARENA_MAX)`, which leaves a host that set `MALLOC_ARENA_MAX` or
     * `glibc.malloc.arena_max`, or runs another allocator, alone). @default none: glibc is left alone
     */
    limitMallocArenas: z
      .custom<(max: number) => unknown>((value) => typeof value === "function", {
        message: "must be a function taking the arena count (such as limitMallocArenas)",
      })
      .optional(),
    /** The `tesseract` executable of `engine: "native"` (a path, or a name on PATH). @default "tesseract" */
    tesseractPath: z.string().min(1).default("tesseract"),
    /**
     * Directory holding `eng.traineddata.gz`. @default the `4.0.0_best_int` data of
     * `@tesseract.js-data/eng` (installed with this package; nothing is downloaded)
     */
    langPath: z.string().min(1).optional(),
    /**
     * Gives the allocator's free memory back to the system after each page (a page decodes to
     * tens of MB that glibc or tcmalloc would otherwise keep for reuse): a {@link MemoryReleaser}
     * (such as `createAllocatorReleaser()` from `@pixport/allocator`), a function that makes one
     * for the engine chosen (see {@link TesseractEngine}), or `false` for none (the prebuilt server
     * passes `false` when its pipeline's memory budget releases once the node is idle). Reading the
     * OCR suite with the native engine, the library's process tree peaked at 159-174 MB with
     * `createAllocatorReleaser()`, against 186-214 MB without (BENCHMARKS.md, "OCR"). With
     * tesseract.js, each page leaves copies of itself on this thread (its cuts, the PGMs sent),
     * external memory V8 frees only when it collects: a releaser that collects V8's whole heap
     * first (`collectGarbage: "always"`) brought the library's peak to 184-198 MB, against 201-215
     * MB without; a collection holds this thread for 10-20 ms. So for both engines:
     * `(engine) => createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" })`.
     * @default false (nothing is released)
     */
    memoryReleaser: z
      .union([
        z.literal(false),
        z.custom<MemoryReleaser | ((engine: TesseractEngine) => MemoryReleaser | false)>(
          (value) =>
            typeof value === "function" ||
            (typeof value === "object" &&
              value !== null &&
              typeof (value as { release?: unknown }).release === "function"),
          {
            message:
              "must be a MemoryReleaser (an object with release()), a function of the engine returning one, or false",
          },
        ),
      ])
      .optional(),
  })
  .strict();

/** Options of {@link createTesseractTextExtractor}; see {@link tesseractTextExtractorOptionsSchema}. */
export type TesseractTextExtractorOptions = z.input<typeof tesseractTextExtractorOptionsSchema>;

/**
 * The embedded extractor: a {@link TextExtractor} with a `close()` that terminates its workers, and
 * the engine it reads with (what `engine: "auto"` chose).
 */
export interface TesseractTextExtractor extends TextExtractor {
  readonly engine: TesseractEngine;
  close(): Promise<void>;
}

/**
 * The engine an extractor reads with: `native` when asked for (an error if the executable cannot
 * run) or when `auto` finds a usable executable, else `wasm`.
 */
function chooseEngine(wanted: "auto" | TesseractEngine, binary: string): TesseractEngine {
  if (wanted === "wasm") return "wasm";
  try {
    checkNativeTesseract(binary);
    return "native";
  } catch (error) {
    if (wanted === "native") throw error;
    return "wasm";
  }
}

/**
 * The embedded, offline `extract-formatted-text` backend (model name `tesseract`): the system's
 * `tesseract` executable when it can run, else tesseract.js (its WebAssembly build; see the
 * `engine` option), LSTM engine, page segmentation mode 4 (blocks without a column split, which the
 * layout step makes from word boxes), with the English data of
 * `@tesseract.js-data/eng` read from disk (`langPath`, `cacheMethod: "none"`: no download, no
 * cache writes). It declares `lossless`, so the core hands it the original's full-size pixels as
 * PNG. Each page is pre-processed: greyscale and contrast stretch, straightened (skew measured from
 * the ink, up to 3°), ruling lines found and painted white, and scaled so the body text's line
 * height is about 40 px (only the part around the ink is made). Ruled tables are read first, one
 * by one (as a single block each), their cells taken from the ruling grid, then painted white for
 * the page pass, which reads only the part of the page with ink (and a text line's margin: see
 * {@link inkBounds}); the layout is converted by {@link layoutToMarkdown} / {@link layoutToPlain}.
 *
 * Workers are created lazily, reused, and queued beyond the pool size; a recognition past
 * `timeoutMs` (or aborted) terminates its worker and rejects (`MODEL_TIMEOUT`).
 *
 * @example
 * ```ts
 * const textExtractor = createTesseractTextExtractor({ workers: 2 });
 * const pipeline = createImagePipeline({ ...deps, models: { textExtractor } });
 * // on shutdown: await textExtractor.close();
 * ```
 */
export function createTesseractTextExtractor(
  input: TesseractTextExtractorOptions = {},
): TesseractTextExtractor {
  const parsed = parseOptions(tesseractTextExtractorOptionsSchema, input, "createTesseractTextExtractor");
  const size = parsed.workers ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
  const engine = chooseEngine(parsed.engine, parsed.tesseractPath);
  const options = { ...parsed, size, maxQueued: parsed.maxQueued ?? size * 4, engine };
  if (options.mallocArenas > 0) options.limitMallocArenas?.(options.mallocArenas);
  const memoryReleaser =
    typeof options.memoryReleaser === "function" ? options.memoryReleaser(engine) : options.memoryReleaser;
  const langPath = options.langPath ?? defaultLangPath();
  // The native engine's traineddata, unpacked on first use (a failed unpack is tried again).
  let tessdata: Promise<string> | undefined;
  const pool = createReaderPool(size, async () => {
    if (engine === "wasm") {
      limitWasmCompilation(options.wasmCompilationTasks);
      return startWasmReader(langPath, options.idleMs);
    }
    if (tessdata === undefined) {
      tessdata = unpackTraineddata(langPath, "eng");
      tessdata.catch(() => {
        tessdata = undefined;
      });
    }
    return nativeReader(options.tesseractPath, await tessdata, options.idleMs);
  });
  const recognize = createRecognizer(options, pool);
  return {
    engine,
    models: [TESSERACT_MODEL],
    defaultModel: TESSERACT_MODEL,
    // The core hands over the full-size pixels losslessly; this extractor scales by text height.
    lossless: true,
    async extract(
      request: { model: string; image: ModelImage; format: TextFormat },
      callOptions: ModelCallOptions = {},
    ): Promise<string> {
      try {
        const { blocks, rules, tableWords } = await recognize.read(request.image, callOptions);
        const page = { rules, tableWords };
        return request.format === "markdown"
          ? layoutToMarkdown(blocks, options.layout, page)
          : layoutToPlain(blocks, page, options.layout);
      } finally {
        // The page's buffers are free (or will be at the next collection): what the allocator
        // kept of them goes back to the system, off this thread. A turn later, so the caller has
        // its answer first: with tesseract.js the release first collects V8's garbage on this
        // thread (10-20 ms), which then overlaps the decoding of a next page on libuv's threads.
        if (memoryReleaser) setImmediate(() => void memoryReleaser.release());
      }
    },
    async close() {
      recognize.close();
      await pool.close();
      const unpacked = await tessdata?.catch(() => undefined);
      if (unpacked !== undefined) await rm(unpacked, { recursive: true, force: true });
    },
  };
}
