import { rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { setFlagsFromString } from "node:v8";
import { createAllocatorReleaser, limitMallocArenas } from "@pixport/allocator";
import type { ModelCallOptions, ModelImage, TextExtractor, TextFormat } from "@pixport/core";
import { ErrorCodes, ImagePipelineError, type MemoryReleaser, parseOptions } from "@pixport/core";
import sharp from "sharp";
import type { PSM, Worker } from "tesseract.js";
import { z } from "zod";
import { stretchContrast } from "./contrast.js";
import { measureSkew } from "./deskew.js";
import { findGrids } from "./grid.js";
import { inkBounds, unreadInk } from "./ink.js";
import {
  layoutToMarkdown,
  layoutToPlain,
  type OcrBlock,
  type OcrBox,
  type OcrLine,
  type OcrWord,
} from "./layout.js";
import { estimateLineHeight, scaleFor, TARGET_LINE_HEIGHT } from "./line-height.js";
import {
  checkNativeTesseract,
  parseHocr,
  RESIDENT_IDLE_MS,
  type Region,
  ResidentTesseract,
  unpackTraineddata,
} from "./native.js";
import { eraseRules, findRuleLines, moveRules, type Rules, scaleRules } from "./rules.js";

/**
 * Bytes a pixel of the page tesseract reads costs while it waits and is read, per engine: the
 * page and its cuts in this process, and tesseract's own images and recogniser. Measured (bench/
 * ocr-large-page.mjs, a 16 MP page read): the native engine's tree grew by about 5 bytes a pixel
 * (Debian's CLI reading a 24 MP grey PGM peaked at 149 MB; the same page as PNG, which its image
 * library widens, at 428 MB), tesseract.js's process by about 14 (the page is copied to its worker
 * and into its virtual file system, and its WebAssembly heap grows to hold it).
 */
export const READ_BYTES_PER_PIXEL = { native: 8, wasm: 16 } as const;

/**
 * Bytes a pixel of the image handed over costs while it is pre-processed: its grey decode, a
 * straightened copy and libvips's working set around them.
 */
export const DECODE_BYTES_PER_PIXEL = 3;

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
     * `OVERLOADED` (Retry-After), so a burst cannot queue for minutes. @default 4 x workers
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
     * less, so that the memory of reading it ({@link READ_BYTES_PER_PIXEL}: 8 bytes a pixel with
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
     * MB with 1 (BENCHMARKS.md, "OCR", twelfth session). The optimised code is the same, it is done
     * on one thread (so over the first few pages instead of the first one); only WebAssembly
     * compilation is affected (the host's own WebAssembly modules are compiled on this many
     * threads too). `0` leaves V8's setting alone. @default 1
     */
    wasmCompilationTasks: z.number().int().min(0).max(128).default(1),
    /**
     * On glibc: caps malloc's arenas for the whole process at this many when the extractor is
     * created (`limitMallocArenas` from `@pixport/allocator`: glibc's `mallopt(M_ARENA_MAX)`),
     * unless the host set `MALLOC_ARENA_MAX` or `glibc.malloc.arena_max` itself, or runs another
     * allocator (a preloaded tcmalloc, as the prebuilt server's default start has). A page is
     * decoded and scaled by libvips on libuv's and libvips' threads, each of which otherwise gets
     * an arena of its own that keeps what its largest page left. Reading the OCR suite page after
     * page as a library, the process peaked at 179-183 MB with the cap, 192-211 MB without, at the
     * same speed; with `MALLOC_ARENA_MAX=2` in the host's environment from its start, 165 MB
     * (BENCHMARKS.md, "OCR", fourteenth session). Arenas made before the cap stay, and once glibc
     * has made more than 8 the cap no longer takes: create the extractor before the host's first
     * image jobs, or set `MALLOC_ARENA_MAX=2` in its environment. `0` leaves glibc alone (the
     * prebuilt server passes it: its launcher sets the allocator, and two arenas cost the resize
     * load 4-10 % of its throughput). @default 2
     */
    mallocArenas: z.number().int().min(0).max(1024).default(2),
    /** The `tesseract` executable of `engine: "native"` (a path, or a name on PATH). @default "tesseract" */
    tesseractPath: z.string().min(1).default("tesseract"),
    /**
     * Directory holding `eng.traineddata.gz`. @default the `4.0.0_best_int` data of
     * `@tesseract.js-data/eng` (installed with this package; nothing is downloaded)
     */
    langPath: z.string().min(1).optional(),
    /**
     * Gives the allocator's free memory back to the system after each page (a page decodes to
     * tens of MB that glibc or tcmalloc would otherwise keep for reuse): a {@link MemoryReleaser},
     * or `false` for none (the prebuilt server passes `false` when its pipeline's memory budget
     * releases once the node is idle). Reading the OCR suite with the native engine, the library's
     * process tree peaked at 159-174 MB with it (and tesseract.js loaded only by a wasm worker),
     * against 186-214 MB before (BENCHMARKS.md, "OCR", ninth session).
     * @default `createAllocatorReleaser()` from `@pixport/allocator`, with `collectGarbage: "always"`
     * on the `wasm` engine (V8's garbage is collected before the release: see the README's OCR
     * "Speed and memory"), `"exposed"` on the native one
     */
    memoryReleaser: z
      .union([
        z.literal(false),
        z.custom<MemoryReleaser>(
          (value) =>
            typeof value === "object" &&
            value !== null &&
            typeof (value as { release?: unknown }).release === "function",
          { message: "must be a MemoryReleaser (an object with release()) or false" },
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
  readonly engine: "wasm" | "native";
  close(): Promise<void>;
}

/**
 * The engine an extractor reads with: `native` when asked for (an error if the executable cannot
 * run) or when `auto` finds a usable executable, else `wasm`.
 */
function chooseEngine(wanted: "auto" | "wasm" | "native", binary: string): "wasm" | "native" {
  if (wanted === "wasm") return "wasm";
  try {
    checkNativeTesseract(binary);
    return "native";
  } catch (error) {
    if (wanted === "native") throw error;
    return "wasm";
  }
}

/** A pre-processed page: 8-bit grey pixels, one byte per pixel, row after row. */
interface GreyPage {
  grey: Uint8Array;
  width: number;
  height: number;
}

/**
 * The header of a binary PGM of the given size: what both engines read (Leptonica decodes it),
 * with no compression to spend time on either side (a PNG cost 10-30 ms to write and as much to
 * read back per page). The native engine writes it and the pixels into the page's file side by
 * side, so a page is never copied to put a header in front of it (one page-sized buffer less per
 * page for the garbage collector to find: see `nativeReader`).
 */
function pgmHeader(width: number, height: number): Buffer {
  return Buffer.from(`P5\n${width} ${height}\n255\n`, "latin1");
}

/**
 * The part of a page inside `area` (inside the page) as one binary PGM buffer, its pixels copied
 * once, straight behind the header (tesseract.js takes a single buffer).
 */
function pgmOf(page: GreyPage, area: Region): Buffer {
  const header = pgmHeader(area.width, area.height);
  const pgm = Buffer.allocUnsafe(header.length + area.width * area.height);
  header.copy(pgm);
  copyArea(page, area, pgm.subarray(header.length));
  return pgm;
}

/** Paints `regions` (inside the page) white, in place. */
function blank(page: GreyPage, regions: readonly Region[]): void {
  for (const region of regions) {
    for (let row = region.top; row < region.top + region.height; row++) {
      const start = row * page.width + region.left;
      page.grey.fill(255, start, start + region.width);
    }
  }
}

/** At most this many regions of unread ink are read again per page (each is a read). */
const MAX_UNREAD_REGIONS = 6;

/** A word read from unread ink is kept at this confidence (0..100) or more: not a picture's noise. */
const MIN_RECOVERED_CONFIDENCE = 70;

/**
 * `blocks` with each of `words` added to the line it stands on (the line its box overlaps most
 * vertically, by at least half the shorter height), in reading order along it; words on no line
 * become lines of a block of their own, placed by their top.
 */
export function withWords(blocks: readonly OcrBlock[], words: readonly OcrWord[]): OcrBlock[] {
  if (words.length === 0) return [...blocks];
  const lines = linesOf(blocks);
  const added = new Map<OcrLine, OcrWord[]>();
  const alone: OcrWord[] = [];
  for (const word of words) {
    let best: OcrLine | undefined;
    let bestOverlap = 0;
    for (const line of lines) {
      const overlap = Math.min(line.bbox.y1, word.bbox.y1) - Math.max(line.bbox.y0, word.bbox.y0);
      const shorter = Math.min(line.bbox.y1 - line.bbox.y0, word.bbox.y1 - word.bbox.y0);
      if (overlap >= 0.5 * shorter && overlap > bestOverlap) {
        best = line;
        bestOverlap = overlap;
      }
    }
    if (best === undefined) alone.push(word);
    else added.set(best, [...(added.get(best) ?? []), word]);
  }
  const merged = blocks.map((block) => ({
    paragraphs: block.paragraphs.map((paragraph) => ({
      lines: paragraph.lines.map((line) => {
        const extra = added.get(line);
        if (extra === undefined) return line;
        const all = [...line.words, ...extra].sort((a, b) => a.bbox.x0 - b.bbox.x0);
        return {
          ...line,
          words: all,
          bbox: {
            x0: Math.min(line.bbox.x0, ...extra.map((word) => word.bbox.x0)),
            y0: line.bbox.y0,
            x1: Math.max(line.bbox.x1, ...extra.map((word) => word.bbox.x1)),
            y1: line.bbox.y1,
          },
        };
      }),
    })),
  }));
  if (alone.length === 0) return merged;
  // Words on no line: one line each, in a block placed by its top.
  const sorted = [...alone].sort((a, b) => a.bbox.y0 - b.bbox.y0 || a.bbox.x0 - b.bbox.x0);
  const block: OcrBlock = {
    paragraphs: [{ lines: sorted.map((word) => ({ words: [word], bbox: word.bbox })) }],
  };
  return withTables(merged, [{ top: sorted[0]!.bbox.y0, blocks: [block] }]);
}

/** The lines of `blocks`, in order. */
const linesOf = (blocks: readonly OcrBlock[]) =>
  blocks.flatMap((block) => block.paragraphs.flatMap((paragraph) => paragraph.lines));

/** The words of `blocks`, in order. */
const wordsOf = (blocks: readonly OcrBlock[]) => linesOf(blocks).flatMap((line) => line.words);

/** The top of a block's first line (Infinity for a block without lines). */
const blockTop = (block: OcrBlock) => Math.min(...linesOf([block]).map((line) => line.bbox.y0));

/**
 * The page's blocks with each table's blocks put where the table stands: before the first page
 * block that starts below the table's top (the layout step orders lines by their boxes within
 * that flow, and places a table by the lines inside its grid).
 */
function withTables(
  blocks: readonly OcrBlock[],
  tables: readonly { top: number; blocks: readonly OcrBlock[] }[],
): OcrBlock[] {
  const merged = [...blocks];
  for (const table of tables) {
    const at = merged.findIndex((block) => blockTop(block) > table.top);
    merged.splice(at < 0 ? merged.length : at, 0, ...table.blocks);
  }
  return merged;
}

/** The part of `region` inside the page (what both engines are asked to read of it). */
function clip(page: GreyPage, region: Region): Region {
  const left = Math.min(Math.max(0, region.left), page.width - 1);
  const top = Math.min(Math.max(0, region.top), page.height - 1);
  return {
    left,
    top,
    width: Math.max(1, Math.min(region.width, page.width - left)),
    height: Math.max(1, Math.min(region.height, page.height - top)),
  };
}

/** Copies the pixels of `region` (inside the page), row after row, into `out`. */
function copyArea(page: GreyPage, region: Region, out: Uint8Array): void {
  for (let row = 0; row < region.height; row++) {
    const from = (region.top + row) * page.width + region.left;
    out.set(page.grey.subarray(from, from + region.width), row * region.width);
  }
}

/** The part of a page inside `region` (inside the page), copied once. */
function cropPage(page: GreyPage, region: Region): GreyPage {
  const grey = new Uint8Array(region.width * region.height);
  copyArea(page, region, grey);
  return { grey, width: region.width, height: region.height };
}

/** Blocks read from a cut moved by the cut's offset (what the layout step reads: boxes, baselines). */
function moveBlocks(blocks: readonly OcrBlock[], dx: number, dy: number): OcrBlock[] {
  const box = (b: OcrBox): OcrBox => ({ x0: b.x0 + dx, y0: b.y0 + dy, x1: b.x1 + dx, y1: b.y1 + dy });
  return blocks.map((block) => ({
    paragraphs: block.paragraphs.map((paragraph) => ({
      lines: paragraph.lines.map((line) => ({
        ...line,
        bbox: box(line.bbox),
        baseline: line.baseline == null ? line.baseline : box(line.baseline),
        words: line.words.map((word) => ({ ...word, bbox: box(word.bbox) })),
      })),
    })),
  }));
}

/** One engine instance of the pool: a tesseract.js worker, or a slot for native processes. */
interface PageReader {
  /** The layout of the part of the page inside `area` (inside the page), boxes in page px. */
  readPage(page: GreyPage, area: Region): Promise<OcrBlock[]>;
  /** The part of the page inside `region` (inside the page) read as one block of text (mode 6). */
  readBlock(page: GreyPage, region: Region): Promise<OcrBlock[]>;
  /** Stops what it is reading now (the caller gave up) and frees it. */
  terminate(): Promise<void>;
}

/**
 * tesseract.js keeps two files in its worker's in-memory file system (JavaScript arrays in the
 * worker's heap, outside its WebAssembly memory) that nothing reads again: the traineddata it
 * unpacked (5.2 MB), which tesseract has loaded by the time the worker is ready, and the last page
 * sent (`/input`, until the next page replaces it).
 */
export const WASM_SPENT_FILES = { traineddata: "/eng.traineddata", page: "/input" } as const;

/**
 * Sets V8's `--wasm-num-compilation-tasks` to `tasks` for the process (see the extractor's
 * `wasmCompilationTasks`), unless `tasks` is 0 or the host's command line (`process.execArgv`: V8
 * options are not allowed in NODE_OPTIONS) sets it. V8 reads it whenever it schedules WebAssembly
 * compilation, so it holds for workers started afterwards.
 */
function limitWasmCompilation(tasks: number): void {
  if (tasks === 0) return;
  if (process.execArgv.some((flag) => /^--wasm[-_]num[-_]compilation[-_]tasks\b/.test(flag))) return;
  setFlagsFromString(`--wasm-num-compilation-tasks=${tasks}`);
}

/**
 * A tesseract.js worker (LSTM engine, English), its parameters set, with the traineddata it
 * unpacked removed from its file system ({@link WASM_SPENT_FILES}).
 */
export async function startWasmWorker(langPath: string): Promise<Worker> {
  const { createWorker, OEM, PSM } = await import("tesseract.js");
  const worker: Worker = await createWorker("eng", OEM.LSTM_ONLY, {
    langPath,
    gzip: true,
    cacheMethod: "none",
    // Without an errorHandler, tesseract.js throws every failed job's error from its message
    // listener as well as rejecting the job's promise: an uncaught exception that ends the host's
    // process (a page its Leptonica cannot decode, or its WebAssembly aborting). The rejection is
    // all the caller needs.
    errorHandler: () => undefined,
  });
  try {
    await worker.setParameters({
      tessedit_pageseg_mode: PSM.SINGLE_COLUMN,
      preserve_interword_spaces: "0",
      // tesseract's own diagnostics ("Estimating resolution as 504" for every page without a
      // resolution, as the PGM pages are) went to the host's stderr on every call; failures still
      // reject the call. The native engine's stderr is read by the adapter, never echoed.
      debug_file: "/dev/null",
    });
    await worker.FS("unlink", [WASM_SPENT_FILES.traineddata]);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  return worker;
}

/**
 * The layout tesseract.js reads on `pgm` (boxes in the PGM's px), its copy of the page removed
 * from the worker's file system afterwards ({@link WASM_SPENT_FILES}), whether the read succeeded
 * or not. Reading the OCR suite as a library, the two removals lowered the peak from 206-224 MB
 * (mean 216) to 204-212 MB (mean 207), six runs each, alternating, on one machine.
 */
export async function readWithWasm(worker: Worker, pgm: Buffer): Promise<OcrBlock[]> {
  try {
    const result = await worker.recognize(pgm, {}, { blocks: true, text: false });
    return (result.data.blocks ?? []) as unknown as OcrBlock[];
  } finally {
    // A page that failed before tesseract.js wrote it leaves no file: nothing to remove.
    await worker.FS("unlink", [WASM_SPENT_FILES.page]).catch(() => undefined);
  }
}

/**
 * A tesseract.js worker, started at once; like a native resident process, it is closed after
 * `idleMs` without a page (its thread, V8 isolate and WebAssembly memory go back, about 70 MB, and
 * its thread no longer keeps the host alive) and started again by the next page.
 */
async function startWasmReader(langPath: string, idleMs: number): Promise<PageReader> {
  // tesseract.js is loaded by the first wasm worker only: 7 MB resident in a host on the native
  // engine, which never uses it.
  const { PSM } = await import("tesseract.js");
  const start = async () => ({ worker: await startWasmWorker(langPath), mode: PSM.SINGLE_COLUMN as PSM });
  let running: ReturnType<typeof start> | undefined = start();
  await running;
  let idleTimer: NodeJS.Timeout | undefined;
  const stop = async () => {
    clearTimeout(idleTimer);
    const ending = running;
    running = undefined;
    await ending?.then(({ worker }) => worker.terminate());
  };
  // The layout of the part of the page inside `area` in the given mode, boxes in page px.
  const recognize = async (page: GreyPage, area: Region, wanted: PSM) => {
    clearTimeout(idleTimer);
    running ??= start();
    try {
      const state = await running;
      if (wanted !== state.mode) {
        await state.worker.setParameters({ tessedit_pageseg_mode: wanted });
        state.mode = wanted;
      }
      return moveBlocks(await readWithWasm(state.worker, pgmOf(page, area)), area.left, area.top);
    } finally {
      idleTimer = setTimeout(() => void stop().catch(() => {}), idleMs);
      idleTimer.unref();
    }
  };
  return {
    // Pages in mode 4 (block finding without the column split), as the native engine reads them.
    // The area is cut out and sent alone, as a table's region is (not the whole page with the
    // region as tesseract's rectangle): tesseract.js copies, writes and decodes every pixel it is
    // given. The cut is copied once, straight into the PGM sent.
    readPage: (page, area) => recognize(page, area, PSM.SINGLE_COLUMN),
    readBlock: (page, region) => recognize(page, region, PSM.SINGLE_BLOCK),
    terminate: stop,
  };
}

/**
 * One resident native process (see {@link ResidentTesseract}), started on first use, in page
 * segmentation mode 4: pages are segmented into blocks without a column split (the layout step
 * finds columns from word boxes: the document suite reads the same as in mode 3), and a table
 * region cut from the page is read with a zone file covering it, which makes tesseract read it as
 * one block of text (mode 6), so short isolated cells are kept. Until 2026-11-26 a second resident
 * process in mode 6 read the tables beside the page (tesseract's mode is fixed per process): 35-47
 * MB more per worker.
 */
function nativeReader(binary: string, tessdata: string, idleMs: number): PageReader {
  const tesseract = new ResidentTesseract({
    binary,
    tessdata,
    language: "eng",
    psm: 4,
    scratch: tessdata,
    idleMs,
  });
  const controller = new AbortController();
  return {
    async readPage(page, area) {
      // The PGM is written as its header and the pixels, without a joined copy; the whole page's
      // own buffer when the area is the page.
      const whole = area.width === page.width && area.height === page.height;
      const pixels = whole ? page.grey : cropPage(page, area).grey;
      const pgm = [pgmHeader(area.width, area.height), pixels];
      return parseHocr(await tesseract.read(pgm, controller.signal), area.left, area.top);
    },
    async readBlock(page, region) {
      const cut = [pgmHeader(region.width, region.height), cropPage(page, region).grey];
      const zones = [{ left: 0, top: 0, width: region.width, height: region.height }];
      return parseHocr(await tesseract.read(cut, controller.signal, zones), region.left, region.top);
    },
    async terminate() {
      controller.abort(new Error("terminated"));
      tesseract.close();
    },
  };
}

/** The English traineddata `@tesseract.js-data/eng` ships (LSTM, integer weights), gzipped. */
export function defaultLangPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int");
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
  const options = parseOptions(tesseractTextExtractorOptionsSchema, input, "createTesseractTextExtractor");
  const size = options.workers ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)));
  const { timeoutMs, upscaleBelow, maxPagePixels } = options;
  const maxQueued = options.maxQueued ?? size * 4;
  let admitted = 0;
  const langPath = options.langPath ?? defaultLangPath();
  const engine = chooseEngine(options.engine, options.tesseractPath);
  if (options.mallocArenas > 0) limitMallocArenas(options.mallocArenas);
  // With tesseract.js, each page leaves copies of itself on this thread (its cuts, the PGMs sent),
  // external memory V8 frees only when it collects, which it puts off until tens of MB have piled
  // up: the default releaser collects V8's whole heap before it releases, after each page. Reading
  // the OCR suite page after page, the library peaked at 184-198 MB with it and one compilation
  // task, 201-215 MB with one compilation task alone, 195-211 MB with young-generation collections
  // (BENCHMARKS.md, "OCR", twelfth session); a collection holds this thread for 10-20 ms. The
  // native engine leaves the host's collector alone.
  const memoryReleaser =
    options.memoryReleaser === false
      ? undefined
      : (options.memoryReleaser ??
        createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" }));
  const idle: PageReader[] = [];
  const busy = new Set<PageReader>();
  const starting = new Set<Promise<PageReader>>();
  const waiting: ((worker: PageReader) => void)[] = [];
  let closed = false;
  // The native engine's traineddata, unpacked on first use (a failed unpack is tried again).
  let tessdata: Promise<string> | undefined;

  async function startWorker(): Promise<PageReader> {
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
  }

  // Pages prepared ahead of the workers: a call pre-processes its page only when fewer than
  // `size` other calls are pre-processing or holding a pre-processed page for a worker, so each
  // worker has its next page ready (pre-processing overlaps reading) but the queued calls wait
  // with their encoded images, not all with their decoded and scaled pages (up to 16 MP each).
  let ahead = 0;
  const waitingAhead: (() => void)[] = [];
  /** Resolves when the call may pre-process, with the function that gives its place back (once). */
  function enterAhead(): Promise<() => void> {
    const place = () => {
      let left = false;
      return () => {
        if (left) return;
        left = true;
        const next = waitingAhead.shift();
        if (next === undefined) ahead -= 1;
        else next();
      };
    };
    if (ahead < size) {
      ahead += 1;
      return Promise.resolve(place());
    }
    return new Promise((resolve) => waitingAhead.push(() => resolve(place())));
  }

  function acquire(): Promise<PageReader> {
    const ready = idle.pop();
    if (ready !== undefined) {
      busy.add(ready);
      return Promise.resolve(ready);
    }
    if (busy.size + starting.size < size) {
      const pending = startWorker();
      starting.add(pending);
      return pending.then(
        (worker) => {
          starting.delete(pending);
          busy.add(worker);
          return worker;
        },
        (error: unknown) => {
          starting.delete(pending);
          throw error;
        },
      );
    }
    return new Promise((resolve) => waiting.push(resolve));
  }

  function release(worker: PageReader): void {
    const next = waiting.shift();
    if (next !== undefined && !closed) {
      next(worker);
      return;
    }
    busy.delete(worker);
    if (closed) void worker.terminate();
    else idle.push(worker);
  }

  function discard(worker: PageReader): void {
    busy.delete(worker);
    void worker.terminate().catch(() => {});
    // A queued call gets a fresh worker in place of the discarded one.
    const next = waiting.shift();
    if (next !== undefined && !closed) {
      void acquireFresh().then(next, () => {});
    }
  }

  async function acquireFresh(): Promise<PageReader> {
    const worker = await startWorker();
    busy.add(worker);
    return worker;
  }

  /**
   * The page tesseract reads: greyscale, contrast stretched (2 % to 99 %, see `stretchContrast`),
   * straightened, ruling lines found and painted white (they go to the layout step instead), then
   * scaled so the body text's line height is about {@link TARGET_LINE_HEIGHT} px, and handed over
   * losslessly (binary PGM).
   */
  async function preprocess(image: ModelImage): Promise<{ page: GreyPage; rules: Rules }> {
    const { data, info } = await sharp(image.data, { failOn: "error" })
      .flatten({ background: "#ffffff" })
      // The same bytes as grayscale(), about 7 ms sooner on a 4-megapixel RGBA page.
      .toColourspace("b-w")
      .raw()
      .toBuffer({ resolveWithObject: true });
    let grey: Uint8Array = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // Each step below is synchronous JavaScript over the page (0.2-4 ms each on 4 megapixels since
    // the scans step over paper a word at a time; 10-20 ms each before): the event loop gets a turn
    // between them, so the host's other requests wait for one step, not for the page.
    stretchContrast(grey, 0.02, 0.99);
    let { width, height } = info;
    await turn();
    const skew = measureSkew(grey, width, height);
    if (Math.abs(skew) >= 0.2) {
      const straight = await sharp(grey, { raw: { width, height, channels: 1 } })
        .rotate(-skew, { background: "#ffffff" })
        .toColourspace("b-w") // one band out, not three (the same bytes as extracting one, faster)
        .raw()
        .toBuffer({ resolveWithObject: true });
      grey = new Uint8Array(straight.data.buffer, straight.data.byteOffset, straight.data.byteLength);
      ({ width, height } = straight.info);
    }
    await turn();
    // The text's line height before the rules are known (a ruled table's columns can count as
    // one tall line, the median is the body text's): rules are longer than a few lines of text.
    const lineHeight = estimateLineHeight(grey, width, height);
    await turn();
    const horizontal = findRuleLines(grey, width, height, "horizontal", { lineHeight });
    await turn();
    const rules = { horizontal, vertical: findRuleLines(grey, width, height, "vertical", { lineHeight }) };
    eraseRules(grey, width, height, rules);
    await turn();
    const textLine = estimateLineHeight(grey, width, height);
    const wanted = textLine === undefined ? fallbackFactor(width, height) : scaleFor(textLine);
    // Within 5 % of the text size wanted, the page is not resampled (and its rules not scaled:
    // until 2026-11-26 they were scaled by such a factor while the page was not).
    let factor = Math.abs(wanted - 1) > 0.05 ? wanted : 1;
    let scaledWidth = Math.max(1, Math.round(width * factor));
    let scaledHeight = Math.max(1, Math.round(height * factor));
    // Only the part of the scaled page around the ink is made: libvips computes the pixels an
    // extract asks for and no others, and they are the same bytes as in the whole scaled page
    // (checked), so what tesseract reads does not change, at about half the resampling and memory
    // on the suite's pages. The margin, two text lines, holds the page pass's own (one line).
    const ink = inkBounds(grey, width, height, 0);
    let cut = inkCut(ink, factor, scaledWidth, scaledHeight);
    // A cut over maxPagePixels is made at a smaller scale (the margin does not shrink with it, so
    // a second try may be needed).
    for (let attempt = 0; cut.width * cut.height > maxPagePixels && attempt < 8; attempt += 1) {
      factor *= Math.sqrt(maxPagePixels / (cut.width * cut.height)) * 0.995;
      scaledWidth = Math.max(1, Math.round(width * factor));
      scaledHeight = Math.max(1, Math.round(height * factor));
      cut = inkCut(ink, factor, scaledWidth, scaledHeight);
    }
    if (factor !== 1) {
      let scaling = sharp(grey, { raw: { width, height, channels: 1 } }).resize(scaledWidth, scaledHeight, {
        kernel: factor > 1 ? "cubic" : "lanczos3",
      });
      if (cut.width < scaledWidth || cut.height < scaledHeight) scaling = scaling.extract(cut);
      const scaled = await scaling
        .toColourspace("b-w") // one band out, not three (the same bytes as extracting one, faster)
        .raw()
        .toBuffer({ resolveWithObject: true });
      grey = new Uint8Array(scaled.data.buffer, scaled.data.byteOffset, scaled.data.byteLength);
    } else if (cut.width < width || cut.height < height) {
      grey = cropPage({ grey, width, height }, cut).grey;
    }
    return {
      page: { grey, width: cut.width, height: cut.height },
      rules: moveRules(scaleRules(rules, factor), -cut.left, -cut.top),
    };
  }

  /**
   * The region of the page scaled by `factor` (to `scaledWidth` x `scaledHeight`) that holds its
   * `ink` (bounds on the unscaled page), with a margin of two text lines; the whole scaled page
   * when it has no ink.
   */
  function inkCut(
    ink: Region | undefined,
    factor: number,
    scaledWidth: number,
    scaledHeight: number,
  ): Region {
    if (ink === undefined) return { left: 0, top: 0, width: scaledWidth, height: scaledHeight };
    const margin = 2 * TARGET_LINE_HEIGHT;
    const left = Math.max(0, Math.floor(ink.left * factor) - margin);
    const top = Math.max(0, Math.floor(ink.top * factor) - margin);
    const right = Math.min(scaledWidth, Math.ceil((ink.left + ink.width) * factor) + margin);
    const bottom = Math.min(scaledHeight, Math.ceil((ink.top + ink.height) * factor) + margin);
    return { left, top, width: right - left, height: bottom - top };
  }

  /** Without a measurable text line (a blank or a picture): upscale small pages as before. */
  function fallbackFactor(width: number, height: number): number {
    const longest = Math.max(width, height);
    return longest < upscaleBelow ? Math.min(3, upscaleBelow / longest) : 1;
  }

  async function recognize(
    image: ModelImage,
    { signal, reserveMemory }: ModelCallOptions,
  ): Promise<{ blocks: OcrBlock[]; rules: Rules; tableWords: OcrWord[] }> {
    if (closed)
      throw new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, "The tesseract extractor is closed.");
    signal?.throwIfAborted();
    // Calls admitted and not finished (pre-processing, waiting or recognising) are counted from
    // their start, so a burst is refused at once rather than after its pre-processing.
    if (admitted >= size + maxQueued) {
      throw new ImagePipelineError(
        ErrorCodes.OVERLOADED,
        `Text extraction is at capacity (${size} running, ${admitted - size} waiting); retry later.`,
        { retryAfterSeconds: Math.max(1, Math.ceil(timeoutMs / 1000 / 4)) },
      );
    }
    admitted += 1;
    // One deadline for the whole call: pre-processing, the wait for a worker and recognition.
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ImagePipelineError(
              ErrorCodes.MODEL_TIMEOUT,
              `Text extraction took longer than ${timeoutMs} ms.`,
            ),
          ),
        timeoutMs,
      );
      onAbort = () => reject(signal?.reason ?? new Error("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    deadline.catch(() => undefined);
    const cleanup = () => {
      admitted -= 1;
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    };
    // The host's memory budget (the core's, when it gives one): the decoded image while it is
    // pre-processed, then the page while it waits and is read. A reservation granted after the
    // call gave up is handed back at once.
    const reserve = async (bytes: number): Promise<() => void> => {
      if (reserveMemory === undefined) return () => undefined;
      const reserving = reserveMemory(bytes);
      try {
        return await Promise.race([reserving, deadline]);
      } catch (error) {
        void reserving.then(
          (release) => release(),
          () => undefined,
        );
        throw error;
      }
    };
    let input: GreyPage;
    let rules: Rules;
    let worker: PageReader;
    let releaseRead: () => void = () => undefined;
    // The call's place among the pages prepared ahead of a worker, once it has one.
    let leaveAhead: (() => void) | undefined;
    let preprocessing: Promise<unknown> | undefined;
    try {
      const entering = enterAhead();
      try {
        leaveAhead = await Promise.race([entering, deadline]);
      } catch (error) {
        void entering.then((leave) => leave());
        throw error;
      }
      const releaseDecode = await reserve(
        Math.ceil(Math.max(1, image.width * image.height) * DECODE_BYTES_PER_PIXEL),
      );
      const preprocessed = preprocess(image);
      preprocessing = preprocessed;
      // Held until the pre-processing really ends, even when the deadline passes first.
      void preprocessed.then(releaseDecode, releaseDecode);
      ({ page: input, rules } = await Promise.race([preprocessed, deadline]));
      releaseRead = await reserve(Math.ceil(input.width * input.height * READ_BYTES_PER_PIXEL[engine]));
      const acquiring = acquire();
      try {
        worker = await Promise.race([acquiring, deadline]);
      } catch (error) {
        // Gave up waiting: a worker handed over later goes straight back to the pool.
        void acquiring.then(release, () => undefined);
        throw error;
      }
      leaveAhead();
      leaveAhead = undefined;
    } catch (error) {
      // A pre-processing still running when the call gave up keeps its place until it ends.
      const leave = leaveAhead;
      if (leave !== undefined) {
        if (preprocessing === undefined) leave();
        else void preprocessing.then(leave, leave);
      }
      releaseRead();
      cleanup();
      throw error;
    }
    try {
      // Ruled tables are read on their own, each as one block of text (page segmentation mode 6,
      // or for the native engine a zone file): in a page pass tesseract drops short, isolated cell
      // texts (a lone number in a column). Their regions come from the rules. They are read first,
      // then painted white for the page pass, which so reads each table's text once, not twice:
      // about a third less time for the page pass of a table page (BENCHMARKS.md, "OCR").
      const regions = findGrids(rules, 0.5 * TARGET_LINE_HEIGHT).map((grid) =>
        clip(input, {
          left: Math.floor(grid.left),
          top: Math.floor(grid.top),
          width: Math.ceil(grid.right - grid.left),
          height: Math.ceil(grid.bottom - grid.top),
        }),
      );
      const tables: { top: number; blocks: OcrBlock[] }[] = [];
      const tableWords: OcrWord[] = [];
      for (const region of regions) {
        const table = await Promise.race([worker.readBlock(input, region), deadline]);
        tables.push({ top: region.top, blocks: table });
        tableWords.push(...wordsOf(table));
      }
      blank(input, regions);
      // The page pass reads the part of the page that has ink (tables blanked), with a margin of
      // a text line: about half the pixels of the suite's pages, and 10-15 % of tesseract's time.
      const area = inkBounds(input.grey, input.width, input.height, TARGET_LINE_HEIGHT) ?? {
        left: 0,
        top: 0,
        width: input.width,
        height: input.height,
      };
      const pageBlocks = await Promise.race([worker.readPage(input, area), deadline]);
      // Text the page layout dropped (a contents page's numbers far right of their titles) is
      // read in a second pass over the ink no word covers, and its words join their lines.
      const pageBoxes = wordsOf(pageBlocks).map((word) => word.bbox);
      const unread = unreadInk(input, area, pageBoxes, {
        cell: TARGET_LINE_HEIGHT / 5,
        minHeight: 0.5 * TARGET_LINE_HEIGHT,
        maxHeight: 2.5 * TARGET_LINE_HEIGHT,
        join: 1.5 * TARGET_LINE_HEIGHT,
        limit: MAX_UNREAD_REGIONS,
      });
      const recovered: OcrWord[] = [];
      if (unread.length > 0) {
        // The words read are painted out first, so a region holds only what was dropped.
        blank(
          input,
          pageBoxes.map((box) =>
            clip(input, {
              left: box.x0 - 2,
              top: box.y0 - 2,
              width: box.x1 - box.x0 + 5,
              height: box.y1 - box.y0 + 5,
            }),
          ),
        );
        for (const region of unread) {
          const found = await Promise.race([worker.readBlock(input, region), deadline]);
          recovered.push(
            ...wordsOf(found).filter(
              (word) => (word.confidence ?? 0) >= MIN_RECOVERED_CONFIDENCE && /[\p{L}\p{N}]/u.test(word.text),
            ),
          );
        }
      }
      const blocks = withTables(withWords(pageBlocks, recovered), tables);
      release(worker);
      return { blocks, rules, tableWords };
    } catch (error) {
      discard(worker);
      if (error instanceof ImagePipelineError || signal?.aborted === true) throw error;
      throw new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, "Text recognition failed.", {
        cause: error,
      });
    } finally {
      releaseRead();
      cleanup();
    }
  }

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
        const { blocks, rules, tableWords } = await recognize(request.image, callOptions);
        const page = { rules, tableWords };
        return request.format === "markdown"
          ? layoutToMarkdown(blocks, options.layout, page)
          : layoutToPlain(blocks, page, options.layout);
      } finally {
        // The page's buffers are free (or will be at the next collection): what the allocator
        // kept of them goes back to the system, off this thread. A turn later, so the caller has
        // its answer first: with tesseract.js the release first collects V8's garbage on this
        // thread (10-20 ms), which then overlaps the decoding of a next page on libuv's threads.
        if (memoryReleaser !== undefined) setImmediate(() => void memoryReleaser.release());
      }
    },
    async close() {
      closed = true;
      const all = [...idle, ...busy, ...(await Promise.all([...starting].map((p) => p.catch(() => null))))];
      idle.length = 0;
      busy.clear();
      await Promise.all(all.map((worker) => worker?.terminate().catch(() => {})));
      const unpacked = await tessdata?.catch(() => undefined);
      if (unpacked !== undefined) await rm(unpacked, { recursive: true, force: true });
    },
  };
}
