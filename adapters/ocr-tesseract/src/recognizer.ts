import { ErrorCodes, ImagePipelineError, type ModelCallOptions, type ModelImage } from "@pixport/core";
import { Semaphore } from "@pixport/core/adapter-kit";
import { type CallDeadline, reserveWithin, startDeadline } from "./call-deadline.js";
import type { GreyPage } from "./grey-page.js";
import type { OcrBlock, OcrWord } from "./layout.js";
import { type PreprocessOptions, preprocess } from "./preprocess.js";
import { readLayout } from "./read-layout.js";
import { extractorClosed, type PageReader, type ReaderPool } from "./reader-pool.js";
import type { Rules } from "./rules.js";

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

/** The extractor's settings a recognizer reads. */
export interface RecognizerOptions extends PreprocessOptions {
  /** Readers in the pool (pages prepared ahead of them at most as many). */
  size: number;
  /** Calls admitted beyond `size` before one is refused with `OCR_AT_CAPACITY`. */
  maxQueued: number;
  /** Deadline of one call, queueing included. */
  timeoutMs: number;
  /** The engine the pool's readers run (see {@link READ_BYTES_PER_PIXEL}). */
  engine: "wasm" | "native";
}

/** What a call holds once its page is ready and a reader is its own. */
interface ReadyCall {
  input: GreyPage;
  rules: Rules;
  reader: PageReader;
  releaseRead: () => void;
}

/**
 * Reads pages with the readers of `pool`: admits a call (or refuses it with `OCR_AT_CAPACITY` when
 * `size + maxQueued` are already in), pre-processes its page once it may hold one ahead of a
 * reader, reserves its memory in the host's budget, and reads it, all within one deadline.
 */
export function createRecognizer(options: RecognizerOptions, pool: ReaderPool) {
  const { size, maxQueued, timeoutMs } = options;
  // Calls admitted and not finished (pre-processing, waiting or recognising) are counted from
  // their start, so a burst is refused at once rather than after its pre-processing.
  const admission = new Semaphore({ capacity: size + maxQueued });
  // Pages prepared ahead of the readers: a call pre-processes its page only when fewer than `size`
  // other calls are pre-processing or holding a pre-processed page for a reader, so each reader has
  // its next page ready (pre-processing overlaps reading) but the queued calls wait with their
  // encoded images, not all with their decoded and scaled pages (up to 16 MP each).
  const ahead = new Semaphore({ capacity: size });
  let closed = false;

  async function read(
    image: ModelImage,
    { signal, reserveMemory }: ModelCallOptions,
  ): Promise<{ blocks: OcrBlock[]; rules: Rules; tableWords: OcrWord[] }> {
    if (closed) throw extractorClosed();
    signal?.throwIfAborted();
    const admitted = admission.tryAcquire();
    if (admitted === null) {
      throw new ImagePipelineError(
        ErrorCodes.OCR_AT_CAPACITY,
        `Text extraction is at capacity (${size} running, ${admission.held - size} waiting); retry later.`,
        { retryAfterSeconds: Math.max(1, Math.ceil(timeoutMs / 1000 / 4)) },
      );
    }
    const deadline = startDeadline(timeoutMs, signal);
    const cleanup = () => {
      admitted();
      deadline.clear();
    };
    let ready: ReadyCall;
    try {
      ready = await prepare({ options, ahead, pool }, image, reserveMemory, deadline);
    } catch (error) {
      cleanup();
      throw error;
    }
    const { input, rules, reader, releaseRead } = ready;
    try {
      const { blocks, tableWords } = await readLayout(reader, input, rules, deadline.reached);
      pool.release(reader);
      return { blocks, rules, tableWords };
    } catch (error) {
      pool.discard(reader);
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
    read,
    close() {
      closed = true;
    },
  };
}

/**
 * The call's page pre-processed and a reader for it. The host's memory budget holds the decoded
 * image while it is pre-processed, then the page while it waits and is read.
 */
async function prepare(
  { options, ahead, pool }: { options: RecognizerOptions; ahead: Semaphore; pool: ReaderPool },
  image: ModelImage,
  reserveMemory: ModelCallOptions["reserveMemory"],
  deadline: CallDeadline,
): Promise<ReadyCall> {
  let releaseRead: () => void = () => undefined;
  // The call's place among the pages prepared ahead of a reader, once it has one.
  let leaveAhead: (() => void) | undefined;
  let preprocessing: Promise<unknown> | undefined;
  try {
    // A call that gives up while it waits for a place or a reader withdraws from the wait.
    leaveAhead = await ahead.acquire({ signal: deadline.signal });
    const releaseDecode = await reserveWithin(
      reserveMemory,
      Math.ceil(Math.max(1, image.width * image.height) * DECODE_BYTES_PER_PIXEL),
      deadline.reached,
    );
    const preprocessed = preprocess(image, options);
    preprocessing = preprocessed;
    // Held until the pre-processing really ends, even when the deadline passes first.
    void preprocessed.then(releaseDecode, releaseDecode);
    const { page: input, rules } = await Promise.race([preprocessed, deadline.reached]);
    releaseRead = await reserveWithin(
      reserveMemory,
      Math.ceil(input.width * input.height * READ_BYTES_PER_PIXEL[options.engine]),
      deadline.reached,
    );
    const reader = await pool.acquire(deadline.signal);
    // A reader granted as the deadline passed, or started after it, goes back unread: a read begun
    // now would be thrown away, and the reader terminated with it.
    if (deadline.signal.aborted) {
      pool.release(reader);
      throw deadline.signal.reason;
    }
    leaveAhead();
    leaveAhead = undefined;
    return { input, rules, reader, releaseRead };
  } catch (error) {
    // A pre-processing still running when the call gave up keeps its place until it ends.
    const leave = leaveAhead;
    if (leave !== undefined) {
      if (preprocessing === undefined) leave();
      else void preprocessing.then(leave, leave);
    }
    releaseRead();
    throw error;
  }
}
