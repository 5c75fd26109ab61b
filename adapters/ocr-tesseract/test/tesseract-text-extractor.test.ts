import { readdirSync, readFileSync } from "node:fs";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it, vi } from "vitest";
import type { GreyPage } from "../src/grey-page.js";
import {
  createTesseractTextExtractor,
  DECODE_BYTES_PER_PIXEL,
  READ_BYTES_PER_PIXEL,
  tesseractTextExtractorOptionsSchema,
} from "../src/index.js";
import { createReaderPool, type PageReader } from "../src/reader-pool.js";
import { createRecognizer } from "../src/recognizer.js";
import { defaultLangPath } from "../src/traineddata.js";
import { readWithWasm, startWasmWorker, WASM_SPENT_FILES } from "../src/wasm-engine.js";
import { readInOwnProcess, renderDocument } from "./own-process.js";

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
  // Node's own threads (its platform and libuv threads, worker threads such as tesseract.js's) are
  // named "node". sharp's libraries start threads of their own ("libvips worker", pango's
  // "[pango] fontcon" after the page is rendered) that end on their own schedule: counted, they
  // made the count after a second read differ from the first's whenever one had ended in between.
  const threadName = (task: string) => {
    try {
      return readFileSync(`/proc/self/task/${task}/comm`, "utf8").trim();
    } catch {
      return ""; // ended since the directory was listed
    }
  };
  const threads = () => readdirSync("/proc/self/task").filter((task) => threadName(task) === "node").length;

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

/** Lets pending promise chains run (not a timer the fake clock holds). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A promise with its resolve function. */
function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Counts calls; `reached(n)` resolves once there have been `n`. */
function counter() {
  let count = 0;
  const waiting = new Map<number, ReturnType<typeof deferred>>();
  const at = (n: number) => waiting.get(n) ?? waiting.set(n, deferred()).get(n)!;
  return {
    add() {
      count += 1;
      at(count).resolve();
    },
    reached: (n: number) => at(n).promise,
  };
}

/**
 * Readers that read nothing: the pages, numbered in the order their first read began, wait until
 * the test answers them (then every read of that page answers at once, with no text).
 */
function gatedReaders() {
  const pages: GreyPage[] = [];
  const begun = counter();
  const gates = new Map<number, ReturnType<typeof deferred>>();
  const gate = (page: number) => gates.get(page) ?? gates.set(page, deferred()).get(page)!;
  const terminated: number[] = [];
  let started = 0;
  let startGate: Promise<void> | undefined;
  const read = async (page: GreyPage) => {
    if (!pages.includes(page)) {
      pages.push(page);
      begun.add();
    }
    await gate(pages.indexOf(page) + 1).promise;
    return [];
  };
  return {
    async start(): Promise<PageReader> {
      started += 1;
      const id = started;
      await startGate;
      return { readPage: read, readBlock: read, terminate: async () => void terminated.push(id) };
    },
    /** Readers started from now on wait for the function returned (a slow engine start). */
    holdStarts() {
      const gate = deferred();
      startGate = gate.promise;
      return gate.resolve;
    },
    /** Resolves once page `n` is being read. */
    reading: (n: number) => begun.reached(n),
    answer: (n: number) => gate(n).resolve(),
    pagesRead: () => pages.length,
    started: () => started,
    terminated,
  };
}

/**
 * A native recognizer of one reader from {@link gatedReaders}, `maxQueued` calls queued at most, a
 * 10 s deadline per call, and a count of the pool's acquisitions.
 */
function gatedRecognizer(maxQueued: number) {
  const readers = gatedReaders();
  const pool = createReaderPool(1, readers.start);
  const acquires = counter();
  const timeoutMs = 10_000;
  const options = { ...tesseractTextExtractorOptionsSchema.parse({}), size: 1, maxQueued, timeoutMs };
  const recognizer = createRecognizer(
    { ...options, engine: "native" },
    {
      ...pool,
      acquire: (signal) => {
        acquires.add();
        return pool.acquire(signal);
      },
    },
  );
  return { readers, pool, acquires, timeoutMs, recognizer };
}

describe("back-pressure and one deadline per call", () => {
  it("refuses calls beyond the running and queued ones at once with OCR_AT_CAPACITY", async () => {
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
      expect(refused.map((outcome) => outcome.code)).toEqual(["OCR_AT_CAPACITY", "OCR_AT_CAPACITY"]);
      // Refused before any work: long before the first recognition could finish.
      const firstDone = Math.min(...outcomes.filter((outcome) => outcome.ok).map((outcome) => outcome.ms));
      for (const outcome of refused) expect(outcome.ms).toBeLessThan(firstDone);
    } finally {
      await extractor.close();
    }
  }, 60_000);

  it("bounds a queued call by its deadline, counted from the call", async () => {
    // Fake readers the test answers, and the call deadlines' timers on a clock the test moves: the
    // order of events is the assertion, not the time anything takes.
    const { readers, pool, acquires, timeoutMs, recognizer } = gatedRecognizer(2);
    const image = { ...(await renderDocument()), mimeType: "image/jpeg" as const };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const settled: string[] = [];
      const calls = ["first", "second", "third"].map((name) =>
        recognizer.read(image, {}).then(
          () => settled.push(`${name} answered`),
          (error: { code?: string }) => settled.push(`${name}: ${error.code}`),
        ),
      );
      await readers.reading(1);
      vi.advanceTimersByTime(timeoutMs / 2);
      readers.answer(1);
      await calls[0];
      // The second call has the reader from half its deadline on; the third waits for it.
      await readers.reading(2);
      await acquires.reached(3);
      vi.advanceTimersByTime(timeoutMs / 2 - 1);
      await settle();
      expect(settled).toEqual(["first answered"]);
      vi.advanceTimersByTime(1);
      await settle();
      // At the deadline from their call: the recognition running is stopped and its reader
      // terminated, and the call still waiting leaves the queue without reading.
      expect(settled.slice(1).sort()).toEqual(["second: MODEL_TIMEOUT", "third: MODEL_TIMEOUT"]);
      expect(readers.pagesRead()).toBe(2);
      expect(readers.terminated).toEqual([1]);
      expect(readers.started()).toBe(1);
    } finally {
      vi.useRealTimers();
      recognizer.close();
      await pool.close();
    }
  });
});

describe("a queued call whose reader comes after its deadline", () => {
  // The call gives the reader back unread and times out: a read begun after the deadline would be
  // thrown away, and its reader terminated with it.
  it.each([
    ["given back in the same turn as the deadline", false],
    ["started after it (the one before was discarded)", true],
  ])("reader %s", async (_, restart) => {
    const { readers, pool, acquires, timeoutMs, recognizer } = gatedRecognizer(1);
    const image = { ...(await renderDocument()), mimeType: "image/jpeg" as const };
    const held = await pool.acquire();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      // One clock step runs both timers with no promise in between: the slot is granted, then the
      // deadline passes before the call resumes.
      if (!restart) setTimeout(() => pool.release(held), timeoutMs - 1);
      const outcome = recognizer.read(image, {}).then(
        () => "answered",
        (error: { code?: string }) => error.code,
      );
      await acquires.reached(1);
      let finishStart: () => void = () => undefined;
      if (restart) {
        finishStart = readers.holdStarts();
        pool.discard(held);
        await settle();
        expect(readers.started()).toBe(2);
      }
      vi.advanceTimersByTime(timeoutMs);
      finishStart();
      expect(await outcome).toBe("MODEL_TIMEOUT");
      expect(readers.pagesRead()).toBe(0);
      // The reader the call had went back to the pool, unharmed: the next call reuses it.
      expect(readers.terminated).toEqual(restart ? [1] : []);
      const next = await pool.acquire();
      expect(readers.started()).toBe(restart ? 2 : 1);
      pool.release(next);
    } finally {
      vi.useRealTimers();
      recognizer.close();
      await pool.close();
    }
  });
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
