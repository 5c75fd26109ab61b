import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { MemoryReleaser } from "@pixport/core";
import { type Allocator, detectAllocator } from "./detect-allocator.js";

/** Options of {@link createAllocatorReleaser}. */
export interface AllocatorReleaserOptions {
  /**
   * Whether a release first collects V8's garbage (on the caller's thread; see `collection`).
   * Where the allocator is `none` a release does nothing, and collects nothing either:
   * - `"exposed"`: only when the process runs with `--expose-gc` (its `globalThis.gc`);
   * - `"always"`: also without the flag. The releaser then takes V8's collection function for
   *   itself on its first release: it turns `--expose-gc` on for as long as it takes to create one
   *   `node:vm` context, takes that context's `gc`, and turns the flag off again (unless the host
   *   set it), so the host's own global scope gets no `gc` and later contexts none either. The
   *   same trick Jest's leak detector uses. A host of `@pixport/ocr-tesseract` on tesseract.js wants it;
   * - `"never"`.
   * @default "exposed"
   */
  collectGarbage?: "exposed" | "always" | "never";
  /**
   * What a collection covers: `"full"`, V8's whole heap (10-20 ms after an OCR page); `"young"`,
   * its young generation only (a scavenge, 1-3 ms), which frees only the buffers whose JavaScript
   * objects died young. Measured with `@pixport/ocr-tesseract` on tesseract.js reading the OCR
   * suite as a library (BENCHMARKS.md, "OCR"): with pauses between pages, 173 and
   * 189 MB peak with young collections (event-loop p99 17 ms) against 172-184 MB with full ones
   * (p99 24-27 ms); page after page without a pause, 195-211 MB against 184-198, since a page's
   * objects then outlive the scavenges. So the extractor uses full collections; `"young"` is for a
   * host that wants shorter pauses more than the last MB.
   * @default "full"
   */
  collection?: "full" | "young";
}

const hostExposesGc = (): boolean =>
  [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].some((flag) =>
    /^--expose[-_]gc$/.test(flag),
  );

/**
 * V8's full collection: the host's `globalThis.gc` when it has one, else (with `own`) one taken
 * from a context created while `--expose-gc` was on for a moment; `undefined` when there is none.
 */
function garbageCollector(own: boolean): (() => void) | undefined {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === "function") return exposed as () => void;
  if (!own) return undefined;
  try {
    setFlagsFromString("--expose-gc");
    const taken: unknown = runInNewContext("gc");
    return typeof taken === "function" ? (taken as () => void) : undefined;
  } catch {
    return undefined;
  } finally {
    if (!hostExposesGc()) setFlagsFromString("--no-expose-gc");
  }
}

/** A {@link MemoryReleaser} with the count and time of its releases (for logs and metrics). */
export interface AllocatorReleaser extends MemoryReleaser {
  readonly allocator: Allocator;
  /**
   * Releases done so far; `ms`, their allocator's part (on a libuv thread); `gcMs`, their garbage
   * collections (see {@link AllocatorReleaserOptions.collectGarbage}), which hold the caller's
   * event loop.
   */
  stats(): { releases: number; ms: number; gcMs: number };
}

/**
 * A {@link MemoryReleaser} for the allocator this process runs on, called through the `koffi` FFI
 * (loaded on the first release): glibc's `malloc_trim(0)`, which gives the free pages of every
 * arena back to the system, or gperftools' `MallocExtension_ReleaseFreeMemory()`, which gives back
 * tcmalloc's free page-heap spans. Each call runs on a libuv thread (3-5 ms after an OCR page on
 * these machines), so the caller's event loop does not wait; a call while one runs shares it.
 * Where neither allocator is found (or koffi cannot load) `release()` resolves and does nothing.
 *
 * When the process runs with `--expose-gc` (the prebuilt server's lean start sets it), or with
 * `collectGarbage: "always"`, a release
 * first collects V8's garbage, a full collection on the caller's thread: the buffers of finished
 * jobs (decoded pages, sharp's outputs) are external memory V8 frees only when it collects, which
 * it otherwise puts off until tens of MB have piled up, and only then can the allocator give
 * their pages back. Through the prebuilt server reading the OCR suite with tesseract.js, the
 * process's high-water mark was 213-214 MB with it against 221 MB without (two runs each); each
 * collection held the event loop for 10-20 ms (median 11.6, at most 22.6 in a library host after
 * each page), counted apart in {@link AllocatorReleaser.stats} (`gcMs`). Otherwise (the default,
 * `collectGarbage: "exposed"`, in a host without the flag) nothing is collected: a library does not
 * pause its host's event loop unasked.
 *
 * Measured with the prebuilt server reading the OCR suite (BENCHMARKS.md, "OCR"): its process
 * peaked about 15 MB lower with a release whenever its memory budget drained after a large job.
 *
 * @example
 * ```ts
 * import { createAllocatorReleaser } from "@pixport/allocator";
 * const pipeline = createImagePipeline(
 *   { ...deps, memoryReleaser: createAllocatorReleaser() },
 *   { memoryBudget: { maxBytes: 1024 ** 3 } },
 * );
 * ```
 */
export function createAllocatorReleaser(options: AllocatorReleaserOptions = {}): AllocatorReleaser {
  const collectGarbage = options.collectGarbage ?? "exposed";
  if (!["exposed", "always", "never"].includes(collectGarbage))
    throw new TypeError(
      `createAllocatorReleaser: collectGarbage must be "exposed", "always" or "never", not ${JSON.stringify(collectGarbage)}`,
    );
  const collection = options.collection ?? "full";
  if (!["full", "young"].includes(collection))
    throw new TypeError(
      `createAllocatorReleaser: collection must be "full" or "young", not ${JSON.stringify(collection)}`,
    );
  // The collector taken for "always", on the first release (tried once).
  let ownCollector: (() => void) | undefined;
  let ownTaken = false;
  const found = detectAllocator();
  let allocator = found.allocator;
  let call: Promise<((done: () => void) => void) | undefined> | undefined;
  let running: Promise<void> | undefined;
  let releases = 0;
  let ms = 0;
  let gcMs = 0;

  const bind = async (): Promise<((done: () => void) => void) | undefined> => {
    try {
      const { default: koffi } = await import("koffi");
      if (found.allocator === "tcmalloc" && found.library !== undefined) {
        // dlopen of a library already mapped returns that same library: no second malloc is loaded.
        const release = koffi.load(found.library).func("void MallocExtension_ReleaseFreeMemory()");
        return (done) => release.async(() => done());
      }
      if (found.allocator === "glibc") {
        const trim = koffi.load("libc.so.6").func("int malloc_trim(size_t)");
        return (done) => trim.async(0, () => done());
      }
    } catch {
      allocator = "none";
    }
    return undefined;
  };

  return {
    get allocator() {
      return allocator;
    },
    stats: () => ({ releases, ms, gcMs }),
    release() {
      if (allocator === "none") return Promise.resolve();
      running ??= (async () => {
        call ??= bind();
        const run = await call;
        if (run !== undefined) {
          // "exposed": only with --expose-gc; a library host that did not ask for it is not collected.
          if (collectGarbage === "always" && !ownTaken) {
            ownTaken = true;
            ownCollector = garbageCollector(true);
          }
          const collect = collectGarbage === "never" ? undefined : (ownCollector ?? garbageCollector(false));
          if (collect !== undefined) {
            const collecting = performance.now();
            // V8's gc extension: no argument is a full collection; { type: "minor" } a scavenge.
            if (collection === "young") (collect as (options: { type: "minor" }) => void)({ type: "minor" });
            else collect();
            gcMs += performance.now() - collecting;
          }
          const start = performance.now();
          await new Promise<void>((resolve) => run(resolve));
          releases += 1;
          ms += performance.now() - start;
        }
      })().finally(() => {
        running = undefined;
      });
      return running;
    },
  };
}
