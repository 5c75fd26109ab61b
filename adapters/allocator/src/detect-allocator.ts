import { readFileSync } from "node:fs";

/** The malloc of this process, as far as the releaser and the arena cap are concerned. */
export type Allocator = "glibc" | "tcmalloc" | "none";

/**
 * The allocator of this process, from the libraries mapped into it: tcmalloc when a `libtcmalloc`
 * is (preloaded, as the prebuilt server's launcher does), else glibc's malloc when Node runs on
 * glibc, else `none` (musl, macOS, Windows: nothing to call). Returns the library's path for
 * tcmalloc.
 */
export function detectAllocator(): { allocator: Allocator; library?: string } {
  if (process.platform !== "linux") return { allocator: "none" };
  let maps = "";
  try {
    maps = readFileSync("/proc/self/maps", "utf8");
  } catch {
    return { allocator: "none" };
  }
  const tcmalloc = /\s(\/\S*\/libtcmalloc[^/\s]*\.so[.\d]*)$/m.exec(maps)?.[1];
  if (tcmalloc !== undefined) return { allocator: "tcmalloc", library: tcmalloc };
  // glibc's C library is mapped as libc.so.6 (musl's as ld-musl-*.so.1).
  return { allocator: /\/libc\.so\.6$/m.test(maps) ? "glibc" : "none" };
}
