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
  /** A reader for one call: an idle one, a new one while fewer than `size` exist, else the next released. */
  acquire(): Promise<PageReader>;
  /** Gives a reader back after a call that went well: to the next waiting call, else to the idle ones. */
  release(reader: PageReader): void;
  /** Terminates a reader whose call failed or gave up; a waiting call gets a fresh one in its place. */
  discard(reader: PageReader): void;
  /** Terminates every reader, starting ones included; readers released later are terminated too. */
  close(): Promise<void>;
}

/**
 * At most `size` readers, created lazily by `start`, reused, and queued for beyond that (first in,
 * first out).
 */
export function createReaderPool(size: number, start: () => Promise<PageReader>): ReaderPool {
  const idle: PageReader[] = [];
  const busy = new Set<PageReader>();
  const starting = new Set<Promise<PageReader>>();
  const waiting: ((reader: PageReader) => void)[] = [];
  let closed = false;

  async function acquireFresh(): Promise<PageReader> {
    const reader = await start();
    busy.add(reader);
    return reader;
  }

  return {
    acquire() {
      const ready = idle.pop();
      if (ready !== undefined) {
        busy.add(ready);
        return Promise.resolve(ready);
      }
      if (busy.size + starting.size < size) {
        const pending = start();
        starting.add(pending);
        return pending.then(
          (reader) => {
            starting.delete(pending);
            busy.add(reader);
            return reader;
          },
          (error: unknown) => {
            starting.delete(pending);
            throw error;
          },
        );
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    release(reader) {
      const next = waiting.shift();
      if (next !== undefined && !closed) {
        next(reader);
        return;
      }
      busy.delete(reader);
      if (closed) void reader.terminate();
      else idle.push(reader);
    },
    discard(reader) {
      busy.delete(reader);
      void reader.terminate().catch(() => {});
      // A queued call gets a fresh reader in place of the discarded one.
      const next = waiting.shift();
      if (next !== undefined && !closed) {
        void acquireFresh().then(next, () => {});
      }
    },
    async close() {
      closed = true;
      const all = [...idle, ...busy, ...(await Promise.all([...starting].map((p) => p.catch(() => null))))];
      idle.length = 0;
      busy.clear();
      await Promise.all(all.map((reader) => reader?.terminate().catch(() => {})));
    },
  };
}

/**
 * Pages prepared ahead of the readers: a call pre-processes its page only when fewer than `size`
 * other calls are pre-processing or holding a pre-processed page for a reader, so each reader has
 * its next page ready (pre-processing overlaps reading) but the queued calls wait with their
 * encoded images, not all with their decoded and scaled pages (up to 16 MP each). `enter` resolves
 * when the call may pre-process, with the function that gives its place back (once).
 */
export function createAheadGate(size: number): { enter(): Promise<() => void> } {
  let ahead = 0;
  const waitingAhead: (() => void)[] = [];
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
  return {
    enter() {
      if (ahead < size) {
        ahead += 1;
        return Promise.resolve(place());
      }
      return new Promise((resolve) => waitingAhead.push(() => resolve(place())));
    },
  };
}
