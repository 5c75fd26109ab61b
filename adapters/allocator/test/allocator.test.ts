import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { limitMallocArenas } from "../src/index.js";

/**
 * The releaser against the real allocators: a child process frees about 180 MB between live
 * buffers, which the allocator keeps (its RSS does not fall), then releases it. The machine needs
 * Debian's libtcmalloc-minimal4 for the tcmalloc cases (`.ci/run` installs it).
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const TCMALLOC = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
  .map((dir) => path.join(dir, "libtcmalloc_minimal.so.4"))
  .find((file) => existsSync(file));

interface Outcome {
  allocator: string;
  start: number;
  allocated: number;
  before: number;
  after: number;
  shared: boolean;
  stats: { releases: number; ms: number };
}

function fragment(kilobytes: number, preload?: string): Outcome {
  const run = spawnSync(
    process.execPath,
    [
      "--expose-gc",
      "--conditions=pixport-source",
      "--import",
      "tsx",
      "test/fixtures/fragment.ts",
      String(kilobytes),
    ],
    {
      cwd: path.resolve(here, ".."),
      env: { ...process.env, LD_PRELOAD: preload ?? "" },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  expect(run.stderr).toBe("");
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout.trim().split("\n").at(-1) as string) as Outcome;
}

describe("createAllocatorReleaser", () => {
  it("finds glibc in a plain node and gives its free memory back with malloc_trim", () => {
    const outcome = fragment(32);
    expect(outcome.allocator).toBe("glibc");
    // glibc kept the freed buffers: the RSS stayed up after the collection...
    expect(outcome.before).toBeGreaterThan(outcome.start + 150);
    // ...until the release.
    expect(outcome.before - outcome.after).toBeGreaterThan(150);
    expect(outcome.shared).toBe(true);
    expect(outcome.stats.releases).toBe(1);
  });

  it.each([32, 1024])(
    "finds a preloaded tcmalloc and gives back its free spans (%i KB buffers)",
    (kilobytes) => {
      expect(TCMALLOC, "libtcmalloc_minimal.so.4 (apt-get install libtcmalloc-minimal4)").toBeDefined();
      const outcome = fragment(kilobytes, TCMALLOC);
      expect(outcome.allocator).toBe("tcmalloc");
      expect(outcome.before).toBeGreaterThan(outcome.start + 150);
      expect(outcome.before - outcome.after).toBeGreaterThan(150);
      expect(outcome.shared).toBe(true);
      expect(outcome.stats.releases).toBe(1);
    },
  );

  const collect = (flags: string[], mode?: string, collection?: string) => {
    const run = spawnSync(
      process.execPath,
      [
        ...flags,
        "--conditions=pixport-source",
        "--import",
        "tsx",
        "test/fixtures/collect.ts",
        ...(mode ? [mode] : []),
        ...(collection ? [collection] : []),
      ],
      { cwd: path.resolve(here, ".."), encoding: "utf8", timeout: 60_000 },
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    return JSON.parse(run.stdout.trim().split("\n").at(-1) as string) as {
      exposed: boolean;
      calls: number;
      before: number;
      after: number;
      gcMs: number;
      leaked: { global: string; context: string };
      gcOptions: unknown[];
    };
  };

  it("collects V8's garbage first when the process runs with --expose-gc, and only then", () => {
    const exposed = collect(["--expose-gc"]);
    expect(exposed.exposed).toBe(true);
    expect(exposed.calls).toBe(1);
    // The 64 MB of dropped Buffers were still counted before the release, and gone after it.
    expect(exposed.before).toBeGreaterThan(60);
    expect(exposed.before - exposed.after).toBeGreaterThan(60);
    // Counted apart from the allocator's part: it holds the event loop.
    expect(exposed.gcMs).toBeGreaterThan(0);
    const plain = collect([]);
    expect(plain.exposed).toBe(false);
    expect(plain.calls).toBe(0);
    expect(plain.gcMs).toBe(0);
    expect(plain.before - plain.after).toBeLessThan(8);
  });

  it('collects without --expose-gc with collectGarbage "always", leaving the host no gc', () => {
    const always = collect([], "always");
    expect(always.exposed).toBe(false);
    expect(always.before).toBeGreaterThan(60);
    expect(always.before - always.after).toBeGreaterThan(60);
    expect(always.gcMs).toBeGreaterThan(0);
    // The flag was on only while the releaser made its own context.
    expect(always.leaked).toEqual({ global: "undefined", context: "undefined" });
    // A host that runs with the flag keeps it, and its own gc is the one called.
    const host = collect(["--expose-gc"], "always");
    expect(host.calls).toBe(1);
    expect(host.leaked).toEqual({ global: "function", context: "function" });
  });

  it('asks V8 for a young-generation collection with collection "young", a full one by default', () => {
    // What each collection frees is measured by bench/ocr.mjs (see the option's TSDoc); here, the
    // collection asked for: the host's gc() called with V8's { type: "minor" }, or with nothing.
    const young = collect(["--expose-gc"], "exposed", "young");
    expect(young.gcOptions).toEqual([{ type: "minor" }]);
    expect(young.gcMs).toBeGreaterThan(0);
    const full = collect(["--expose-gc"], "exposed", "full");
    expect(full.gcOptions).toEqual([null]);
    expect(full.before - full.after).toBeGreaterThan(60);
    // Without the host's flag, through the releaser's own collector.
    const own = collect([], "always", "young");
    expect(own.calls).toBe(0);
    expect(own.gcMs).toBeGreaterThan(0);
  });

  it('never collects with collectGarbage "never", even with --expose-gc', () => {
    const never = collect(["--expose-gc"], "never");
    expect(never.calls).toBe(0);
    expect(never.gcMs).toBe(0);
    expect(never.before - never.after).toBeLessThan(8);
  });

  it("refuses an unknown collectGarbage", async () => {
    const { createAllocatorReleaser } = await import("../src/index.js");
    expect(() => createAllocatorReleaser({ collectGarbage: "sometimes" as never })).toThrow(
      /collectGarbage must be "exposed", "always" or "never", not "sometimes"/,
    );
    expect(() => createAllocatorReleaser({ collection: "old" as never })).toThrow(
      /collection must be "full" or "young", not "old"/,
    );
  });
});

describe("limitMallocArenas", () => {
  const arenas = (cap: string, env: Record<string, string> = {}, preload?: string) => {
    const run = spawnSync(
      process.execPath,
      ["--conditions=pixport-source", "--import", "tsx", "test/fixtures/arenas.ts", cap],
      {
        cwd: path.resolve(here, ".."),
        env: { ...process.env, LD_PRELOAD: preload ?? "", ...env },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    return JSON.parse(run.stdout.trim().split("\n").at(-1) as string) as {
      applied: boolean | null;
      start: number;
      after: number;
    };
  };

  it("caps glibc's arenas: threads that allocate at once share the arenas there are", () => {
    // Without the cap, the six threads got arenas of their own.
    const free = arenas("none");
    expect(free.after).toBeGreaterThanOrEqual(free.start + 4);
    const capped = arenas("2");
    expect(capped.applied).toBe(true);
    // Arenas made before the call stay; no more were made.
    expect(capped.after).toBe(Math.max(2, capped.start));
  });

  it("leaves an arena count the host set alone, and does nothing on tcmalloc", () => {
    const host = arenas("2", { MALLOC_ARENA_MAX: "3" });
    expect(host.applied).toBe(false);
    expect(host.after).toBeGreaterThan(2);
    expect(host.after).toBeLessThanOrEqual(3);
    expect(arenas("2", { GLIBC_TUNABLES: "glibc.malloc.arena_max=3" }).applied).toBe(false);
    expect(TCMALLOC, "libtcmalloc_minimal.so.4 (apt-get install libtcmalloc-minimal4)").toBeDefined();
    expect(arenas("2", {}, TCMALLOC).applied).toBe(false);
  });

  it.each([0, 1.5, Number.NaN, 2000])("refuses %s as a cap", (cap) => {
    expect(() => limitMallocArenas(cap)).toThrow(TypeError);
  });
});
