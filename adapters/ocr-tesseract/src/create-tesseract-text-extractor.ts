import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import type { ModelCallOptions, ModelImage, TextExtractor, TextFormat } from "@pixport/core";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import sharp from "sharp";
import { createWorker, OEM, PSM, type Worker } from "tesseract.js";
import { type LayoutOptions, layoutToMarkdown, layoutToPlain, type OcrBlock } from "./layout.js";

/** The API-visible model name of the embedded extractor. */
export const TESSERACT_MODEL = "tesseract";

/** Options of {@link createTesseractTextExtractor}; every field has a default. */
export interface TesseractTextExtractorOptions {
  /**
   * Workers (each a WebAssembly tesseract of ~100 MB) created on first use, at most this many.
   * @default half the available cores, at least 1, at most 4
   */
  workers?: number;
  /** Deadline per recognition; the worker is terminated and replaced after it. @default 60000 */
  timeoutMs?: number;
  /** Longest side (px) of images the core sends (it downscales to this). @default 2000 */
  maxImageSide?: number;
  /** Images whose longest side is below this are upscaled (small text reads better). @default 1600 */
  upscaleBelow?: number;
  /** Layout tuning of the markdown converter. */
  layout?: LayoutOptions;
  /**
   * Directory holding `eng.traineddata.gz`. @default the `4.0.0_best_int` data of
   * `@tesseract.js-data/eng` (installed with this package; nothing is downloaded)
   */
  langPath?: string;
}

/** The embedded extractor: a {@link TextExtractor} with a `close()` that terminates its workers. */
export interface TesseractTextExtractor extends TextExtractor {
  close(): Promise<void>;
}

function defaultLangPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int");
}

/**
 * The embedded, offline `extract-formatted-text` backend (model name `tesseract`): tesseract.js
 * (WebAssembly LSTM engine, page segmentation mode 3) with the English data of
 * `@tesseract.js-data/eng` read from disk (`langPath`, `cacheMethod: "none"`: no download, no
 * cache writes). Images are pre-processed (grayscale, contrast stretch, upscaled when small) and
 * the layout is converted by {@link layoutToMarkdown} / {@link layoutToPlain}.
 *
 * Workers are created lazily, reused, and queued beyond the pool size; a recognition past
 * `timeoutMs` (or aborted) terminates its worker and rejects (`MODEL_TIMEOUT`).
 */
export function createTesseractTextExtractor(
  options: TesseractTextExtractorOptions = {},
): TesseractTextExtractor {
  const size = Math.max(
    1,
    Math.floor(options.workers ?? Math.min(4, Math.max(1, Math.floor(availableParallelism() / 2)))),
  );
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxImageSide = options.maxImageSide ?? 2000;
  const upscaleBelow = options.upscaleBelow ?? 1600;
  const langPath = options.langPath ?? defaultLangPath();
  const idle: Worker[] = [];
  const busy = new Set<Worker>();
  const starting = new Set<Promise<Worker>>();
  const waiting: ((worker: Worker) => void)[] = [];
  let closed = false;

  async function startWorker(): Promise<Worker> {
    const worker = await createWorker("eng", OEM.LSTM_ONLY, {
      langPath,
      gzip: true,
      cacheMethod: "none",
    });
    await worker.setParameters({ tessedit_pageseg_mode: PSM.AUTO, preserve_interword_spaces: "0" });
    return worker;
  }

  function acquire(): Promise<Worker> {
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

  function release(worker: Worker): void {
    const next = waiting.shift();
    if (next !== undefined && !closed) {
      next(worker);
      return;
    }
    busy.delete(worker);
    if (closed) void worker.terminate();
    else idle.push(worker);
  }

  function discard(worker: Worker): void {
    busy.delete(worker);
    void worker.terminate().catch(() => {});
    // A queued call gets a fresh worker in place of the discarded one.
    const next = waiting.shift();
    if (next !== undefined && !closed) {
      void acquireFresh().then(next, () => {});
    }
  }

  async function acquireFresh(): Promise<Worker> {
    const worker = await startWorker();
    busy.add(worker);
    return worker;
  }

  async function preprocess(image: ModelImage): Promise<Buffer> {
    const longest = Math.max(image.width, image.height);
    const factor = longest < upscaleBelow ? Math.min(3, upscaleBelow / longest) : 1;
    let pipeline = sharp(image.data, { failOn: "error" }).grayscale().normalise();
    if (factor > 1.05) {
      pipeline = pipeline.resize(Math.round(image.width * factor), Math.round(image.height * factor), {
        kernel: "cubic",
      });
    }
    return pipeline.png().toBuffer();
  }

  async function recognize(image: ModelImage, signal: AbortSignal | undefined): Promise<OcrBlock[]> {
    if (closed)
      throw new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, "The tesseract extractor is closed.");
    signal?.throwIfAborted();
    const input = await preprocess(image);
    signal?.throwIfAborted();
    const worker = await acquire();
    // Aborted while pre-processing or queued for a worker: give the worker back unused.
    if (signal?.aborted === true) {
      release(worker);
      signal.throwIfAborted();
    }
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
    try {
      const result = await Promise.race([
        worker.recognize(input, {}, { blocks: true, text: false }),
        deadline,
      ]);
      release(worker);
      return (result.data.blocks ?? []) as unknown as OcrBlock[];
    } catch (error) {
      discard(worker);
      if (error instanceof ImagePipelineError || signal?.aborted === true) throw error;
      throw new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, "Text recognition failed.", {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    }
  }

  return {
    models: [TESSERACT_MODEL],
    defaultModel: TESSERACT_MODEL,
    maxImageSide: () => maxImageSide,
    async extract(
      request: { model: string; image: ModelImage; format: TextFormat },
      callOptions: ModelCallOptions = {},
    ): Promise<string> {
      const blocks = await recognize(request.image, callOptions.signal);
      return request.format === "markdown" ? layoutToMarkdown(blocks, options.layout) : layoutToPlain(blocks);
    },
    async close() {
      closed = true;
      const all = [...idle, ...busy, ...(await Promise.all([...starting].map((p) => p.catch(() => null))))];
      idle.length = 0;
      busy.clear();
      await Promise.all(all.map((worker) => worker?.terminate().catch(() => {})));
    },
  };
}
