import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createTesseractTextExtractor, DECODE_BYTES_PER_PIXEL, READ_BYTES_PER_PIXEL } from "../src/index.js";
import { defaultLangPath } from "../src/traineddata.js";
import { readWithWasm, startWasmWorker, WASM_SPENT_FILES } from "../src/wasm-engine.js";

/**
 * Renders a document with librsvg (SVG text, DejaVu Sans). The sharp codec blocks untrusted
 * loaders process-wide when created; this file never creates it, and unblocks the SVG loader only
 * in case another file in the same worker process did.
 */
async function renderDocument(): Promise<{ data: Uint8Array; width: number; height: number }> {
  const width = 900;
  const height = 620;
  const text = (x: number, y: number, size: number, value: string, weight = "normal") =>
    `<text x="${x}" y="${y}" font-size="${size}" font-weight="${weight}">${value}</text>`;
  const rows = [
    ["Fruit", "Price", "Stock"],
    ["Apple", "120", "40"],
    ["Pear", "90", "12"],
  ];
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
  <rect width="100%" height="100%" fill="white"/>
  <g font-family="DejaVu Sans" fill="black">
    ${text(40, 70, 44, "Quarterly Report", "bold")}
    ${text(40, 130, 20, "The warehouse shipped more parcels this quarter.")}
    ${text(40, 160, 20, "Returns fell sharply after the new packaging.")}
    ${text(60, 220, 20, "• Apples arrive on Monday")}
    ${text(60, 250, 20, "• Pears arrive on Tuesday")}
    ${text(60, 310, 20, "1. Open the crate")}
    ${text(60, 340, 20, "2. Count the fruit")}
    ${rows.map((row, index) => row.map((cell, column) => text(60 + column * 220, 420 + index * 40, 20, cell)).join("")).join("")}
  </g></svg>`;
  sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
  const data = await sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
  return { data, width, height };
}

/**
 * Reads the rendered page in a node process of its own (a script file, not -e: the tesseract.js
 * worker thread inherits the process's flags): `extractor` is the expression creating the
 * extractor, `ending` what the script does after printing the plain text (JSON) on stdout; with
 * `prelude`, statements run before the extractor is created, and `flags`, node's own; with
 * `early`, the extractor is created before the page's file is read. `text` is the first stdout
 * line that is a JSON string, `out` all of it. The process is killed if it has not exited after
 * 30 s. The script has `@pixport/allocator`'s `createAllocatorReleaser` and `limitMallocArenas` in
 * scope, and `releaserFor`: the releaser a host injects for the engine chosen (V8's garbage
 * collected first with tesseract.js).
 */
/** `@pixport/allocator`'s source, imported by the scripts of {@link readInOwnProcess}. */
const ALLOCATOR = new URL("../../allocator/src/index.ts", import.meta.url).href;

async function readInOwnProcess(
  extractor: string,
  ending: string,
  { prelude = "", flags = [], early = false }: { prelude?: string; flags?: string[]; early?: boolean } = {},
): Promise<{ code: number | null; text: string; err: string; out: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), "pixport-own-process-"));
  try {
    const page = await renderDocument();
    await writeFile(path.join(directory, "page.jpg"), page.data);
    const script = path.join(directory, "read.mjs");
    await writeFile(
      script,
      `import { readFile } from "node:fs/promises";
      import { createTesseractTextExtractor } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
      import { createAllocatorReleaser, limitMallocArenas } from ${JSON.stringify(ALLOCATOR)};
      const releaserFor = (engine) =>
        createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" });
      ${early ? `${prelude}\nconst extractor = ${extractor};` : ""}
      const data = new Uint8Array(await readFile(${JSON.stringify(path.join(directory, "page.jpg"))}));
      ${early ? "" : `${prelude}\nconst extractor = ${extractor};`}
      const image = { data, mimeType: "image/jpeg", width: ${page.width}, height: ${page.height} };
      console.log(JSON.stringify(await extractor.extract({ model: "tesseract", image, format: "plain" })));
      ${ending}`,
    );
    const child = spawn(process.execPath, [...flags, "--import", "tsx", script], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    const exit = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await exit;
    clearTimeout(timer);
    const line = out.split("\n").find((candidate) => candidate.startsWith('"'));
    return { code, text: line === undefined ? "" : JSON.parse(line), err, out };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

describe("createTesseractTextExtractor (offline, real tesseract)", () => {
  it.each(["wasm", "native"] as const)(
    "%s: extracts markdown with a heading, lists and a table, and plain text with line breaks",
    async (engine) => {
      const extractor = createTesseractTextExtractor({ engine, workers: 1 });
      try {
        const rendered = await renderDocument();
        const image = { ...rendered, mimeType: "image/jpeg" as const };
        const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
        const lines = markdown.split("\n");
        expect(lines[0]).toBe("# Quarterly Report");
        expect(markdown).toContain("The warehouse shipped more parcels this quarter.");
        expect(lines).toContain("- Apples arrive on Monday");
        expect(lines).toContain("- Pears arrive on Tuesday");
        expect(lines).toContain("1. Open the crate");
        expect(lines).toContain("2. Count the fruit");
        expect(lines).toContain("| Fruit | Price | Stock |");
        expect(lines).toContain("| Apple | 120 | 40 |");
        expect(lines).toContain("| Pear | 90 | 12 |");

        const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
        const plainLines = plain.split("\n");
        expect(plainLines).toContain("Quarterly Report");
        expect(plainLines).toContain("The warehouse shipped more parcels this quarter.");
        expect(plainLines).toContain("Returns fell sharply after the new packaging.");
        expect(plain).not.toContain("#");
      } finally {
        await extractor.close();
      }
    },
    60_000,
  );

  it.each(["wasm", "native"] as const)(
    "%s: reads a page without writing to the host's stderr (tesseract's diagnostics stay inside)",
    async (engine) => {
      // In a process of its own, so its stderr is this call's alone.
      const { code, text, err } = await readInOwnProcess(
        `createTesseractTextExtractor({ engine: ${JSON.stringify(engine)}, workers: 1 })`,
        "await extractor.close();",
      );
      expect(code, err).toBe(0);
      expect(text).toMatch(/Quarterly Report/);
      expect(err).toBe("");
    },
    60_000,
  );
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

describe("the wasm worker's file system", () => {
  it("keeps neither the unpacked traineddata nor the last page (they would stay in the worker's heap); a failed read only rejects", async () => {
    const worker = await startWasmWorker(defaultLangPath());
    try {
      const files = async () => (await worker.FS("readdir", ["/"])).data as string[];
      const name = (file: string) => file.slice(1);
      // The worker read its model (it reads a page below), and the file it came from is gone.
      expect(await files()).toContain("dev"); // the listing is the root's
      expect(await files()).not.toContain(name(WASM_SPENT_FILES.traineddata));
      const { data, info } = await sharp((await renderDocument()).data)
        .toColourspace("b-w")
        .raw()
        .toBuffer({ resolveWithObject: true });
      const pgm = Buffer.concat([Buffer.from(`P5\n${info.width} ${info.height}\n255\n`), data]);
      const blocks = await readWithWasm(worker, pgm);
      const words = blocks.flatMap((block) =>
        block.paragraphs.flatMap((paragraph) =>
          paragraph.lines.flatMap((line) => line.words.map((w) => w.text)),
        ),
      );
      expect(words.slice(0, 2)).toEqual(["Quarterly", "Report"]);
      expect(await files()).not.toContain(name(WASM_SPENT_FILES.page));
      // A page tesseract.js cannot decode rejects the call, and leaves no file either. (Without the
      // worker's errorHandler tesseract.js also throws the error from its message listener: an
      // uncaught exception, which vitest reports as a failed run, and which ends a host's process.)
      await expect(readWithWasm(worker, Buffer.from("P5\n9 9\n255\n"))).rejects.toThrow();
      expect(await files()).not.toContain(name(WASM_SPENT_FILES.page));
    } finally {
      await worker.terminate();
    }
  }, 60_000);
});

describe("idle workers", () => {
  const threads = () => readdirSync("/proc/self/task").length;

  it("wasm: closes a worker unused for idleMs (its thread and WebAssembly memory go), and the next call starts another", async () => {
    const extractor = createTesseractTextExtractor({ engine: "wasm", workers: 1, idleMs: 300 });
    try {
      const rendered = await renderDocument();
      const image = { ...rendered, mimeType: "image/jpeg" as const };
      const before = threads();
      expect(await extractor.extract({ model: "tesseract", image, format: "plain" })).toMatch(
        /Quarterly Report/,
      );
      const reading = threads();
      expect(reading).toBeGreaterThan(before);
      const started = performance.now();
      while (threads() >= reading && performance.now() - started < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(threads()).toBeLessThan(reading);
      expect(await extractor.extract({ model: "tesseract", image, format: "plain" })).toMatch(
        /Quarterly Report/,
      );
      expect(threads()).toBe(reading);
    } finally {
      await extractor.close();
    }
  }, 60_000);

  it("wasm: a host that never calls close() exits once its worker is idle", async () => {
    // Before idleMs, a tesseract.js worker thread kept its host's process alive until close().
    const { code, text, err } = await readInOwnProcess(
      `createTesseractTextExtractor({ engine: "wasm", workers: 1, idleMs: 500 })`,
      "",
    );
    expect(code, `${err} (killed after 30 s if it did not exit on its own)`).toBe(0);
    expect(text).toMatch(/Quarterly Report/);
  }, 60_000);
});

describe("back-pressure and one deadline per call", () => {
  it("refuses calls beyond the running and queued ones at once with OVERLOADED", async () => {
    const extractor = createTesseractTextExtractor({ workers: 1, maxQueued: 1 });
    try {
      const rendered = await renderDocument();
      const image = { ...rendered, mimeType: "image/jpeg" as const };
      const started = performance.now();
      const calls = Array.from({ length: 4 }, () =>
        extractor.extract({ model: "tesseract", image, format: "plain" }).then(
          () => ({ ok: true, code: undefined as string | undefined, ms: performance.now() - started }),
          (error: { code?: string }) => ({ ok: false, code: error.code, ms: performance.now() - started }),
        ),
      );
      const outcomes = await Promise.all(calls);
      expect(outcomes.filter((outcome) => outcome.ok)).toHaveLength(2);
      const refused = outcomes.filter((outcome) => !outcome.ok);
      expect(refused.map((outcome) => outcome.code)).toEqual(["OVERLOADED", "OVERLOADED"]);
      // Refused before any work: long before the first recognition could finish.
      const firstDone = Math.min(...outcomes.filter((outcome) => outcome.ok).map((outcome) => outcome.ms));
      for (const outcome of refused) expect(outcome.ms).toBeLessThan(firstDone);
    } finally {
      await extractor.close();
    }
  }, 60_000);

  it("bounds a queued call by its deadline, counted from the call", async () => {
    const extractor = createTesseractTextExtractor({ workers: 1, maxQueued: 8, timeoutMs: 60_000 });
    try {
      const rendered = await renderDocument();
      const image = { ...rendered, mimeType: "image/jpeg" as const };
      // Time a cold call (worker start-up included) and warm ones, then give a second extractor a
      // deadline that a cold call fits in comfortably but that a call queued behind several
      // recognitions cannot: the queued call must time out, counted from its call. (Measured here,
      // not assumed: a loaded CI machine can be several times slower than a quiet one.) A warm
      // call's time is the fastest of three: from a single one, taken while the machine was busy
      // with other test files, the queue ahead of the last call could read faster than measured and
      // let it finish in time (it did once in CI).
      const coldStarted = performance.now();
      await extractor.extract({ model: "tesseract", image, format: "plain" });
      const cold = performance.now() - coldStarted;
      let one = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 3; round += 1) {
        const timed = performance.now();
        await extractor.extract({ model: "tesseract", image, format: "plain" });
        one = Math.min(one, performance.now() - timed);
      }
      const deadline = Math.round(Math.max(one * 1.5, cold * 2));
      // The last call starts after (calls - 1) recognitions: twice as many as fit in the deadline at
      // the fastest time measured, and 3 more (the calls all end by the deadline, so more calls do
      // not make the test longer).
      const calls = Math.ceil((deadline / one) * 2) + 4;
      const short = createTesseractTextExtractor({ workers: 1, maxQueued: calls, timeoutMs: deadline });
      try {
        await short.extract({ model: "tesseract", image, format: "plain" }); // warm its worker
        const started = performance.now();
        const results = await Promise.all(
          Array.from({ length: calls }, () =>
            short.extract({ model: "tesseract", image, format: "plain" }).then(
              () => ({ code: "ok", ms: performance.now() - started }),
              (error: { code?: string }) => ({ code: error.code, ms: performance.now() - started }),
            ),
          ),
        );
        expect(results.at(-1)?.code).toBe("MODEL_TIMEOUT");
        // Whatever each call's outcome, none took much longer than the deadline from its call.
        for (const result of results) expect(result.ms).toBeLessThan(deadline + 1_500);
      } finally {
        await short.close();
      }
    } finally {
      await extractor.close();
    }
  }, 120_000);
});

describe("memory: the host's budget and the largest page read", () => {
  /** A host budget that logs each reservation and release, and may refuse or answer late. */
  function recordingBudget(answer?: (bytes: number) => Promise<void>) {
    const events: string[] = [];
    const asked: number[] = [];
    let held = 0;
    let count = 0;
    let mostAtOnce = 0;
    const reserveMemory = async (bytes: number) => {
      asked.push(bytes);
      const index = asked.length;
      await answer?.(bytes);
      events.push(`reserve ${index}`);
      held += bytes;
      count += 1;
      mostAtOnce = Math.max(mostAtOnce, count);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held -= bytes;
        count -= 1;
        events.push(`release ${index}`);
      };
    };
    return { reserveMemory, events, asked, held: () => held, mostAtOnce: () => mostAtOnce };
  }

  type Budget = ReturnType<typeof recordingBudget>;
  type Extractor = ReturnType<typeof createTesseractTextExtractor>;
  type Page = Awaited<ReturnType<typeof renderDocument>> & { mimeType: "image/jpeg" };

  /** Runs `test` with a new extractor and the rendered page, then closes the extractor. */
  async function withExtractor(
    options: Parameters<typeof createTesseractTextExtractor>[0],
    test: (extractor: Extractor, page: Page) => Promise<void>,
  ): Promise<void> {
    const extractor = createTesseractTextExtractor(options);
    try {
      await test(extractor, { ...(await renderDocument()), mimeType: "image/jpeg" });
    } finally {
      await extractor.close();
    }
  }

  /** The page's plain text, read with `budget`'s reservations. */
  const read = (extractor: Extractor, page: Page, budget: Budget) =>
    extractor.extract(
      { model: "tesseract", image: page, format: "plain" },
      { reserveMemory: budget.reserveMemory },
    );

  it("reserves the decoded image while it is pre-processed, then the page while it is read, and gives both back", async () => {
    await withExtractor({ workers: 1 }, async (extractor, page) => {
      const budget = recordingBudget();
      expect(await read(extractor, page, budget)).toContain("Quarterly Report");
      expect(budget.events).toEqual(["reserve 1", "release 1", "reserve 2", "release 2"]);
      expect(budget.asked[0]).toBe(Math.ceil(page.width * page.height * DECODE_BYTES_PER_PIXEL));
      // The page read: its 20 px text scaled up to the size tesseract reads best, cut to the ink.
      const pagePixels = (budget.asked[1] as number) / READ_BYTES_PER_PIXEL[extractor.engine];
      expect(pagePixels).toBeGreaterThan(page.width * page.height);
      expect(budget.held()).toBe(0);
    });
  }, 60_000);

  it("reads a page whose text would need more than maxPagePixels at a smaller scale, within it", async () => {
    const pageRead = async (maxPagePixels?: number) => {
      let result = { text: "", pixels: 0 };
      await withExtractor({ workers: 1, maxPagePixels }, async (extractor, page) => {
        const budget = recordingBudget();
        const text = await read(extractor, page, budget);
        result = { text, pixels: (budget.asked[1] as number) / READ_BYTES_PER_PIXEL[extractor.engine] };
      });
      return result;
    };
    const free = await pageRead();
    const capped = await pageRead(400_000);
    expect(free.pixels).toBeGreaterThan(400_000);
    expect(capped.pixels).toBeLessThanOrEqual(400_000);
    expect(capped.pixels).toBeGreaterThan(300_000);
    // Still read, at about 70 % of the text size wanted.
    expect(capped.text).toContain("Quarterly Report");
    expect(capped.text).toContain("Returns fell sharply after the new packaging.");
  }, 60_000);

  it("prepares one page ahead per worker: queued calls wait with their encoded image, not their decoded page", async () => {
    await withExtractor({ workers: 1, maxQueued: 4 }, async (extractor, page) => {
      const budget = recordingBudget();
      const texts = await Promise.all(Array.from({ length: 5 }, () => read(extractor, page, budget)));
      for (const text of texts) expect(text).toContain("Quarterly Report");
      // Each call reserved twice (its decode, then its page)...
      expect(budget.asked).toHaveLength(10);
      // ...but at most two calls held memory at once: the page being read and the next one.
      expect(budget.mostAtOnce()).toBe(2);
      expect(budget.held()).toBe(0);
    });
  }, 60_000);

  it("refuses the call when the host refuses the memory, and reads the next call", async () => {
    await withExtractor({ workers: 1, maxQueued: 0 }, async (extractor, page) => {
      const refusing = recordingBudget(async () => {
        throw new ImagePipelineError(ErrorCodes.OVERLOADED, "no room");
      });
      await expect(read(extractor, page, refusing)).rejects.toMatchObject({
        code: "OVERLOADED",
        message: "no room",
      });
      // The refused call is no longer counted (with no queue, a leftover would refuse this one).
      const budget = recordingBudget();
      await expect(read(extractor, page, budget)).resolves.toContain("Quarterly Report");
      expect(budget.held()).toBe(0);
    });
  }, 60_000);

  it("hands back memory granted after the call's deadline passed", async () => {
    await withExtractor({ workers: 1, timeoutMs: 300 }, async (extractor, page) => {
      const late = recordingBudget(() => new Promise((resolve) => setTimeout(resolve, 800)));
      await expect(read(extractor, page, late)).rejects.toMatchObject({ code: "MODEL_TIMEOUT" });
      await expect.poll(() => late.events, { timeout: 3_000 }).toEqual(["reserve 1", "release 1"]);
      expect(late.held()).toBe(0);
    });
  }, 60_000);
});
