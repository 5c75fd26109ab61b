import { readFileSync } from "node:fs";

/** The malloc libraries recognised in a process's memory map, by the file name they load from. */
const KNOWN = [
  ["tcmalloc", /\/libtcmalloc[^/\s]*\.so/],
  ["jemalloc", /\/libjemalloc[^/\s]*\.so/],
  ["mimalloc", /\/libmimalloc[^/\s]*\.so/],
] as const;

/**
 * The malloc this process runs on: `tcmalloc`, `jemalloc` or `mimalloc` when one of them is mapped
 * (preloaded, as `bin/with-allocator` does), else `system` (glibc's, or the platform's where there
 * is no `/proc/self/maps`). Read from the process's own memory map, so it reports what really
 * loaded, not what was asked for.
 */
export function activeAllocator(maps: string | undefined = readMaps()): string {
  if (maps === undefined) return "system";
  for (const [name, pattern] of KNOWN) if (pattern.test(maps)) return name;
  return "system";
}

function readMaps(): string | undefined {
  try {
    return readFileSync("/proc/self/maps", "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Takes the library `bin/with-allocator` preloaded (named in `PIXPORT_PRELOADED`) out of
 * `LD_PRELOAD`, keeping any other entries, so the processes the server starts (the native
 * tesseract, the ONNX inference processes) run on the system malloc they were measured with. This
 * process keeps the allocator it started with (a preload acts at start only).
 */
export function forgetLauncherPreload(env: NodeJS.ProcessEnv = process.env): void {
  const preloaded = env.PIXPORT_PRELOADED;
  if (preloaded === undefined) return;
  delete env.PIXPORT_PRELOADED;
  const rest = (env.LD_PRELOAD ?? "").split(/[:\s]+/).filter((entry) => entry !== "" && entry !== preloaded);
  if (rest.length === 0) delete env.LD_PRELOAD;
  else env.LD_PRELOAD = rest.join(":");
}
