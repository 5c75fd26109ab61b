import { ErrorCodes, isImagePipelineError, type MemoryReleaser } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createTesseractTextExtractor, type TesseractEngine } from "../src/index.js";
import { readInOwnProcess } from "./own-process.js";

/**
 * The memory hooks a host injects (the adapter imports no allocator): `limitMallocArenas` is
 * called once, at creation, with `mallocArenas`; `memoryReleaser` is a `MemoryReleaser` or a
 * function of the engine chosen, released after each page. Then the real allocator behind them,
 * in processes of their own: V8's collections and glibc's arenas.
 */
describe("the injected memory hooks", () => {
  it("calls limitMallocArenas once with mallocArenas (2 by default), and not at all with 0", async () => {
    const calls: number[] = [];
    const limitMallocArenas = (max: number) => calls.push(max);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas }).close();
    expect(calls).toEqual([2]);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas, mallocArenas: 3 }).close();
    expect(calls).toEqual([2, 3]);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas, mallocArenas: 0 }).close();
    expect(calls).toEqual([2, 3]);
  });

  it("refuses hooks of the wrong shape with INVALID_CONFIGURATION naming them", () => {
    const refusal = (options: object) => {
      try {
        createTesseractTextExtractor({ engine: "wasm", ...options } as never);
      } catch (error) {
        expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
        return (error as Error).message;
      }
      throw new Error("not refused");
    };
    expect(refusal({ limitMallocArenas: 2 })).toMatch(/limitMallocArenas/);
    expect(refusal({ memoryReleaser: { allocator: "glibc" } })).toMatch(/memoryReleaser/);
    expect(refusal({ memoryReleaser: true })).toMatch(/memoryReleaser/);
  });

  it("makes the releaser for the engine chosen and releases after each page, a turn after the answer", async () => {
    const engines: TesseractEngine[] = [];
    let releases = 0;
    const releaser: MemoryReleaser = {
      allocator: "test",
      release: async () => {
        releases += 1;
      },
    };
    const extractor = createTesseractTextExtractor({
      engine: "wasm",
      workers: 1,
      memoryReleaser: (engine) => {
        engines.push(engine);
        return releaser;
      },
    });
    try {
      expect(engines).toEqual(["wasm"]);
      const page = await sharp({ create: { width: 320, height: 200, channels: 3, background: "#fff" } })
        .png()
        .toBuffer();
      const image = { data: new Uint8Array(page), mimeType: "image/png" as const, width: 320, height: 200 };
      for (let round = 1; round <= 2; round += 1) {
        await extractor.extract({ model: "tesseract", image, format: "plain" });
        expect(releases).toBe(round - 1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(releases).toBe(round);
      }
    } finally {
      await extractor.close();
    }
    expect(engines).toEqual(["wasm"]);
  }, 60_000);
});

describe("V8's settings around tesseract.js", () => {
  // Records the V8 flags the extractor sets (node:v8's setFlagsFromString, wrapped and passed on).
  const recordFlags = `
    const { default: v8 } = await import("node:v8");
    const { syncBuiltinESMExports } = await import("node:module");
    const flagsSet = [];
    const setFlags = v8.setFlagsFromString;
    v8.setFlagsFromString = (flag) => { flagsSet.push(flag); setFlags(flag); };
    syncBuiltinESMExports();`;
  const report = `
    await new Promise((resolve) => setTimeout(resolve, 300));
    console.log(JSON.stringify({ flagsSet, gc: typeof globalThis.gc }));
    await extractor.close();`;
  const read = async (extractor: string, flags: string[] = []) => {
    const { code, text, err, out } = await readInOwnProcess(extractor, report, {
      prelude: recordFlags,
      flags: ["--trace-gc", ...flags],
    });
    expect(code, err).toBe(0);
    expect(text).toMatch(/Quarterly Report/);
    const lines = out.split("\n");
    const outcome = JSON.parse(lines.find((line) => line.startsWith("{")) as string) as {
      flagsSet: string[];
      gc: string;
    };
    // V8's --trace-gc names a collection asked for through gc() "testing".
    return {
      ...outcome,
      askedCollections: lines.filter((line) => /Mark-Compact.*testing/.test(line)).length,
    };
  };

  it("wasm: one compilation task set before the worker starts, and V8's garbage collected after the page by the injected releaser, with no gc left to the host", async () => {
    const wasm = await read(
      'createTesseractTextExtractor({ engine: "wasm", workers: 1, memoryReleaser: releaserFor })',
    );
    expect(wasm.flagsSet).toEqual(["--wasm-num-compilation-tasks=1", "--expose-gc", "--no-expose-gc"]);
    expect(wasm.askedCollections).toBeGreaterThanOrEqual(1);
    expect(wasm.gc).toBe("undefined");
  }, 60_000);

  it("wasm: leaves the compilation tasks to V8 with wasmCompilationTasks 0, or when the host's command line sets them", async () => {
    const off = await read(
      'createTesseractTextExtractor({ engine: "wasm", workers: 1, wasmCompilationTasks: 0, memoryReleaser: releaserFor })',
    );
    expect(off.flagsSet).toEqual(["--expose-gc", "--no-expose-gc"]);
    const host = await read(
      'createTesseractTextExtractor({ engine: "wasm", workers: 1, wasmCompilationTasks: 3, memoryReleaser: releaserFor })',
      ["--wasm-num-compilation-tasks=2"],
    );
    expect(host.flagsSet).toEqual(["--expose-gc", "--no-expose-gc"]);
    expect(host.askedCollections).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("native: sets no V8 flag and leaves the host's collector alone (the injected releaser is made for the native engine)", async () => {
    const native = await read(
      'createTesseractTextExtractor({ engine: "native", workers: 1, memoryReleaser: releaserFor })',
    );
    expect(native.flagsSet).toEqual([]);
    expect(native.askedCollections).toBe(0);
    expect(native.gc).toBe("undefined");
  }, 60_000);

  it("wasm without an injected releaser: collects nothing and takes no gc (the adapter imports no allocator)", async () => {
    const bare = await read('createTesseractTextExtractor({ engine: "wasm", workers: 1 })');
    expect(bare.flagsSet).toEqual(["--wasm-num-compilation-tasks=1"]);
    expect(bare.askedCollections).toBe(0);
    expect(bare.gc).toBe("undefined");
  }, 60_000);
});

describe("glibc's arenas", () => {
  // Counts glibc's arenas (malloc_info's report) when the extractor is created and after a page.
  // The extractor is created first thing: glibc fixes its own limit (8 per core) once it has made
  // more than 8 arenas, after which a cap no longer takes (see the option's TSDoc).
  // Inline and synchronous (koffi loaded with require): importing a shared helper module reads
  // files on libuv's threads, which made glibc pass 8 arenas before the extractor existed.
  const countArenas = `
    const { createRequire } = await import("node:module");
    const koffi = createRequire(${JSON.stringify(new URL("../../allocator/package.json", import.meta.url).href)})("koffi");
    const libc = koffi.load("libc.so.6");
    const fopen = libc.func("void* fopen(const char*, const char*)");
    const fclose = libc.func("int fclose(void*)");
    const mallocInfo = libc.func("int malloc_info(int, void*)");
    const { readFileSync, mkdtempSync, rmSync } = await import("node:fs");
    const reports = mkdtempSync((await import("node:os")).tmpdir() + "/pixport-arenas-");
    const report = reports + "/info.xml";
    const arenas = () => {
      const file = fopen(report, "w");
      mallocInfo(0, file);
      fclose(file);
      return (readFileSync(report, "utf8").match(/<heap nr=/g) ?? []).length;
    };
    const atCreation = arenas();`;
  const ending = `
    console.log(JSON.stringify({ atCreation, after: arenas() }));
    rmSync(reports, { recursive: true, force: true });
    await extractor.close();`;
  const read = async (options: string) => {
    const { code, text, err, out } = await readInOwnProcess(
      `createTesseractTextExtractor({ engine: "wasm", workers: 1, memoryReleaser: releaserFor, limitMallocArenas${options} })`,
      ending,
      { prelude: countArenas, early: true },
    );
    expect(code, err).toBe(0);
    expect(text).toMatch(/Quarterly Report/);
    return JSON.parse(out.split("\n").find((line) => line.startsWith("{")) as string) as {
      atCreation: number;
      after: number;
    };
  };

  it("are capped at 2 through the injected limitMallocArenas when the extractor is created: reading a page makes no more", async () => {
    const capped = await read("");
    expect(capped.after).toBe(Math.max(2, capped.atCreation));
    // With the cap off, the page's threads made arenas of their own.
    const free = await read(", mallocArenas: 0");
    expect(free.after).toBeGreaterThan(Math.max(2, free.atCreation));
  }, 60_000);
});
