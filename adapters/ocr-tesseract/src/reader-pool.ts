import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { type Release, Semaphore } from "@pixport/core/adapter-kit";
import type { GreyPage, Region } from "./grey-page.js";
import type { OcrBlock } from "./layout.js";

/** One engine instance of the pool: a tesseract.js worker, or a slot for native processes. */
export interface PageReader {
  /** The layout of the part of the page inside `area` (inside the page), boxes in page px. */
  readPage(page: GreyPage, area: Region): Promise<OcrBlock[]>;
  /** The part of the page inside `region` (inside the page) read as one block of text (mode 6). */
  readBlock(page: GreyPage, region: Region): Promise<OcrBlock[]>;
  /** Stops what it is reading now (the caller gave up) and frees it. */
  terminate(): Promise<void>;
}

/** The readers of one extractor; see {@link createReaderPool}. */
export interface ReaderPool {
  /**
   * A reader for one call: an idle one, a new one while fewer than `size` exist, else the next one
   * given back (first in, first out). Aborting `signal` while the call waits withdraws it: it
   * rejects with the signal's reason and takes no reader. Rejects once the pool is closed.
   */
  acquire(signal?: AbortSignal): Promise<PageReader>;
  /** Gives a reader back after a call that went well: to the next waiting call, else to the idle ones. */
  release(reader: PageReader): void;
  /** Terminates a reader whose call failed or gave up; a waiting call gets a fresh one in its place. */
  discard(reader: PageReader): void;
  /**
   * Refuses the waiting calls, terminates every reader, starting ones included; readers given back
   * later are terminated too.
   */
  close(): Promise<void>;
}

/** The refusal of a call made to, or waiting on, a closed extractor. */
export function extractorClosed(): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, "The tesseract extractor is closed.");
}

/**
 * At most `size` readers, created lazily by `start`, reused, and waited for beyond that: a
 * {@link Semaphore} of `size` slots, one held with each reader in use.
 */
export function createReaderPool(size: number, start: () => Promise<PageReader>): ReaderPool {
  const slots = new Semaphore({ capacity: size });
  const idle: PageReader[] = [];
  /** Readers in use, each with the release of its slot. */
  const busy = new Map<PageReader, Release>();
  const starting = new Set<Promise<PageReader>>();
  let closed = false;

  /** The reader for a granted slot: an idle one, else a new one (a failed start frees the slot). */
  async function readerFor(slot: Release): Promise<PageReader> {
    const ready = idle.pop();
    if (ready !== undefined) {
      busy.set(ready, slot);
      return ready;
    }
    const pending = start();
    starting.add(pending);
    try {
      const reader = await pending;
      busy.set(reader, slot);
      return reader;
    } catch (error) {
      slot();
      throw error;
    } finally {
      starting.delete(pending);
    }
  }

  /** Takes `reader` out of use and gives its slot to the next waiting call. */
  function giveBack(reader: PageReader, keep: boolean): void {
    const slot = busy.get(reader);
    busy.delete(reader);
    if (keep && !closed) idle.push(reader);
    else void reader.terminate().catch(() => undefined);
    slot?.();
  }

  return {
    async acquire(signal) {
      return readerFor(await slots.acquire({ signal }));
    },
    release: (reader) => giveBack(reader, true),
    discard: (reader) => giveBack(reader, false),
    async close() {
      closed = true;
      slots.close(extractorClosed);
      const started = await Promise.all([...starting].map((pending) => pending.catch(() => null)));
      const all = [...idle.splice(0), ...busy.keys(), ...started];
      await Promise.all(all.map((reader) => reader?.terminate().catch(() => undefined)));
    },
  };
}
