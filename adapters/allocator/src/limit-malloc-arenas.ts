import { createRequire } from "node:module";
import { detectAllocator } from "./detect-allocator.js";

/** glibc's `mallopt` parameter for the number of arenas (malloc.h: `M_ARENA_MAX`). */
const M_ARENA_MAX = -8;

/** Whether the host chose glibc's arena count itself (read by glibc when the process started). */
const hostSetsArenas = (): boolean =>
  (process.env.MALLOC_ARENA_MAX ?? "") !== "" ||
  /(^|:)glibc\.malloc\.arena_max=/.test(process.env.GLIBC_TUNABLES ?? "");

/**
 * Caps glibc's malloc at `max` arenas for the rest of the process (`mallopt(M_ARENA_MAX, max)`,
 * called through koffi), as `MALLOC_ARENA_MAX=max` would have from the start.
 *
 * glibc gives each thread that allocates while the others hold their arena a new arena of its
 * own, up to 8 per core (16 on 2 cores), and memory freed in one arena serves only the threads
 * of that arena. Image work allocates its large buffers on whichever libuv or libvips thread runs
 * the job, so each arena ends up holding what its threads' largest jobs left, and the process's
 * resident memory grows with the number of arenas. With the cap, threads share the arenas there
 * are. Reading the OCR suite page after page as a library (`@pixport/ocr-tesseract`, given this as
 * its `limitMallocArenas`, calls it when it is created), the process peaked at 179-183 MB with the cap, 192-211 MB without, at
 * the same speed; with `MALLOC_ARENA_MAX=2` in its environment from the start, 165 MB
 * (BENCHMARKS.md, "OCR").
 *
 * The earlier the better: arenas made before the call stay (a fresh Node process has 2; loading
 * sharp makes it 6), and once glibc has made more than 8 it fixes its own limit (8 per core) and
 * a cap no longer takes. So call it before the host's first image jobs, or set
 * `MALLOC_ARENA_MAX` in the host's environment, which holds from the first allocation.
 *
 * Returns `true` when glibc took the setting (which, past 8 arenas, no longer has an effect:
 * glibc cannot tell). Does nothing, and returns `false`, on another allocator (a preloaded
 * tcmalloc, musl, macOS, Windows), when koffi cannot load, or when the host set the arena count
 * itself (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`), which wins.
 *
 * @throws TypeError when `max` is not an integer from 1 to 1024.
 */
export function limitMallocArenas(max: number): boolean {
  if (!Number.isInteger(max) || max < 1 || max > 1024)
    throw new TypeError(`limitMallocArenas: max must be an integer from 1 to 1024, not ${String(max)}`);
  if (detectAllocator().allocator !== "glibc" || hostSetsArenas()) return false;
  try {
    const koffi = createRequire(import.meta.url)("koffi") as typeof import("koffi");
    const mallopt = koffi.load("libc.so.6").func("int mallopt(int, int)");
    // mallopt returns 1 on success.
    return mallopt(M_ARENA_MAX, max) === 1;
  } catch {
    return false;
  }
}
