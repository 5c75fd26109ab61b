import { setFlagsFromString } from "node:v8";
import type { PSM, Worker } from "tesseract.js";
import { moveBlocks } from "./blocks.js";
import { type GreyPage, pgmOf, type Region } from "./grey-page.js";
import type { OcrBlock } from "./layout.js";
import type { PageReader } from "./reader-pool.js";

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
export function limitWasmCompilation(tasks: number): void {
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
export async function startWasmReader(langPath: string, idleMs: number): Promise<PageReader> {
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
