import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { characterErrorRate, childProcesses, type DocumentSpec, renderDocument } from "@pixport/testing";
import { describe, expect, it } from "vitest";
import { createTesseractTextExtractor } from "../src/index.js";

/**
 * `engine: "native"`: the system's tesseract executable (Debian's tesseract-ocr, which `.ci/run`
 * installs), resident processes that read page after page. The document suite and the
 * TextExtractor conformance suite run on it too (document-suite.test.ts,
 * text-extractor-conformance.test.ts), the hOCR reader and the resident process have their own
 * files (hocr.test.ts, resident-tesseract.test.ts); this file covers the extractor on it: the
 * missing executable, killing a page whose caller gave up, and the unpacked traineddata's
 * temporary directory.
 */

const tessdataDirectories = async (pid: number) =>
  (await readdir(tmpdir())).filter((name) => name.startsWith(`pixport-tessdata-${pid}-`));

/** A document rendered as a PNG at scale 1, and the image an extractor is handed for it. */
async function pngPage(spec: DocumentSpec) {
  const document = await renderDocument(spec, { format: "png", scale: 1 });
  const image = {
    data: document.data,
    mimeType: "image/png" as const,
    width: document.width,
    height: document.height,
  };
  return { document, image };
}

describe("createTesseractTextExtractor({ engine: 'native' })", () => {
  it("refuses to start without the executable, saying how to get it", () => {
    expect(() =>
      createTesseractTextExtractor({ engine: "native", tesseractPath: "/nonexistent/tesseract" }),
    ).toThrow(/tesseract executable \(\/nonexistent\/tesseract\).*apt-get install tesseract-ocr.*"wasm"/);
  });

  it("kills a page whose caller gave up, then reads the next page; close removes the traineddata", async () => {
    // The real tesseract behind a wrapper that first waits while a marker file exists: a page that
    // is still being read when its caller gives up, for as long as the test needs (without the kill,
    // the process would outlive the call by half a minute).
    const bin = await mkdtemp(path.join(tmpdir(), "pixport-slow-tesseract-"));
    const marker = path.join(bin, "slow");
    const wrapper = path.join(bin, "tesseract");
    await writeFile(marker, "");
    await writeFile(
      wrapper,
      `#!/bin/sh\n[ "$1" != "--version" ] && [ -e '${marker}' ] && sleep 30\nexec tesseract "$@"\n`,
      { mode: 0o755 },
    );
    const { document, image } = await pngPage({
      name: "deadline",
      width: 1200,
      blocks: [
        { kind: "heading", level: 1, text: "Native Deadline" },
        { kind: "paragraph", lines: ["The process reading this page is killed when the call gives up."] },
      ],
    });
    const extractor = createTesseractTextExtractor({ engine: "native", tesseractPath: wrapper, workers: 1 });
    try {
      const controller = new AbortController();
      const pending = extractor.extract(
        { model: "tesseract", image, format: "plain" },
        { signal: controller.signal },
      );
      pending.catch(() => undefined);
      // Abort once the page's process runs (pre-processing comes first).
      const started = performance.now();
      let seen: number[] = [];
      while (seen.length === 0 && performance.now() - started < 20_000) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        seen = childProcesses({ name: "tesseract" });
      }
      expect(seen).toHaveLength(1);
      controller.abort(new Error("client went away"));
      await expect(pending).rejects.toThrow("client went away");
      // The process is gone: killed, not left to sleep and read its page.
      const gone = performance.now();
      while (existsSync(`/proc/${seen[0]}`) && performance.now() - gone < 5_000) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(existsSync(`/proc/${seen[0]}`)).toBe(false);
      expect(await tessdataDirectories(process.pid)).toHaveLength(1);
      await rm(marker);
      const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
      expect(characterErrorRate(plain, document.plain)).toBeLessThanOrEqual(0.02);
    } finally {
      await extractor.close();
      await rm(bin, { recursive: true, force: true });
    }
    expect(await tessdataDirectories(process.pid)).toEqual([]);
  }, 60_000);

  it("reads a page and its ruled table in one process per worker: the table through a zone file, then the page without it", async () => {
    // The real tesseract behind a wrapper that logs each start and, for every path it is sent,
    // whether a zone file sits beside it when tesseract gets the path.
    const bin = await mkdtemp(path.join(tmpdir(), "pixport-logged-tesseract-"));
    const log = path.join(bin, "calls.log");
    const pageCopy = path.join(bin, "page.pgm");
    const wrapper = path.join(bin, "tesseract");
    await writeFile(
      wrapper,
      [
        "#!/bin/sh",
        `[ "$1" = "--version" ] && exec tesseract "$@"`,
        `echo "start $*" >> '${log}'`,
        "while IFS= read -r file; do",
        `  if [ -e "\${file%.pgm}.uzn" ]; then echo "zoned $(cat "\${file%.pgm}.uzn")" >> '${log}'; else echo page >> '${log}'; cp "$file" '${pageCopy}'; fi`,
        '  echo "$file"',
        'done | exec tesseract "$@"',
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    const rows = [
      ["Item", "Price", "Stock"],
      ["Apple", "120", "40"],
      ["Pear", "90", "8"],
    ];
    const { image } = await pngPage({
      name: "one-process",
      width: 1200,
      blocks: [
        { kind: "heading", level: 1, text: "Stock" },
        { kind: "table", rows, ruled: true },
      ],
    });
    const extractor = createTesseractTextExtractor({ engine: "native", tesseractPath: wrapper, workers: 1 });
    try {
      const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
      for (const row of rows) expect(markdown).toContain(`| ${row.join(" | ")} |`);
      const again = await extractor.extract({ model: "tesseract", image, format: "markdown" });
      expect(again).toBe(markdown);
      const calls = readFileSync(log, "utf8").trim().split("\n");
      const starts = calls.filter((line) => line.startsWith("start "));
      expect(starts).toHaveLength(1);
      expect(starts[0]).toContain("--psm 4");
      // Twice: the table region cut out, one zone covering it, then the page (no zone file).
      const reads = calls.filter((line) => !line.startsWith("start "));
      expect(reads).toHaveLength(4);
      expect(reads[0]).toMatch(/^zoned 0 0 \d+ \d+ Text$/);
      expect(reads[1]).toBe("page");
      expect(reads.slice(2)).toEqual(reads.slice(0, 2));
      // The page pass gets the page with the table painted white: the table's text is read once.
      const pageText = spawnSync("tesseract", [pageCopy, "-", "--psm", "4"], { encoding: "utf8" }).stdout;
      expect(pageText).toContain("Stock");
      expect(pageText).not.toMatch(/Apple|Pear|Price/);
      // ...cut to its ink and a margin: the heading alone, narrower than the table.
      const [pageWidth] = readFileSync(pageCopy).toString("latin1", 0, 32).split(/\s+/).slice(1).map(Number);
      const [, , tableWidth] = (reads[0] as string).split(" ").slice(1).map(Number);
      expect(pageWidth).toBeLessThan((tableWidth as number) / 2);
    } finally {
      await extractor.close();
      await rm(bin, { recursive: true, force: true });
    }
  }, 60_000);

  it("removes the unpacked traineddata a crashed owner left, and keeps a running owner's", async () => {
    // A process that has exited: its pid is free (pids are not reused this quickly).
    const dead = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => dead.once("exit", resolve));
    const deadDirectory = path.join(tmpdir(), `pixport-tessdata-${dead.pid}-crashed`);
    const liveDirectory = path.join(tmpdir(), `pixport-tessdata-${process.ppid}-running`);
    await mkdir(deadDirectory, { recursive: true });
    await writeFile(path.join(deadDirectory, "eng.traineddata"), "left behind");
    await mkdir(liveDirectory, { recursive: true });
    const extractor = createTesseractTextExtractor({ engine: "native", workers: 1 });
    try {
      const document = await renderDocument(
        {
          name: "sweep",
          width: 1200,
          blocks: [{ kind: "paragraph", lines: ["Sweep the crashed owner's files."] }],
        },
        { format: "png", scale: 1 },
      );
      const plain = await extractor.extract({
        model: "tesseract",
        image: { data: document.data, mimeType: "image/png", width: document.width, height: document.height },
        format: "plain",
      });
      expect(characterErrorRate(plain, document.plain)).toBeLessThanOrEqual(0.02);
      expect(existsSync(deadDirectory)).toBe(false);
      expect(existsSync(liveDirectory)).toBe(true);
    } finally {
      await extractor.close();
      await rm(liveDirectory, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("createTesseractTextExtractor({ engine: 'auto' }), the default", () => {
  /** A `tesseract` that logs each invocation's arguments, then runs `run` (or the real one). */
  async function loggingTesseract(run = 'exec tesseract "$@"') {
    const bin = await mkdtemp(path.join(tmpdir(), "pixport-auto-tesseract-"));
    const log = path.join(bin, "calls.log");
    const wrapper = path.join(bin, "tesseract");
    await writeFile(wrapper, `#!/bin/sh\necho "$*" >> '${log}'\n${run}\n`, { mode: 0o755 });
    const calls = () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []);
    return { bin, wrapper, calls };
  }
  const page = () =>
    pngPage({
      name: "auto",
      width: 1200,
      blocks: [
        { kind: "heading", level: 1, text: "Engine Choice" },
        { kind: "paragraph", lines: ["The extractor reads with the executable when it can run."] },
      ],
    });

  it("is what an extractor gets without an engine, and picks the executable here (CI installs it)", async () => {
    const extractor = createTesseractTextExtractor();
    try {
      expect(extractor.engine).toBe("native");
    } finally {
      await extractor.close();
    }
  });

  it("reads with the tesseract executable when it runs and is 4 or later", async () => {
    const { bin, wrapper, calls } = await loggingTesseract();
    const extractor = createTesseractTextExtractor({ engine: "auto", tesseractPath: wrapper, workers: 1 });
    try {
      expect(extractor.engine).toBe("native");
      const { document, image } = await page();
      const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
      expect(characterErrorRate(plain, document.plain)).toBeLessThanOrEqual(0.02);
      // The version check, then the resident page process that read the page.
      expect(calls()[0]).toBe("--version");
      expect(calls().some((call) => call.includes("--psm 4") && call.includes("stream_filelist=1"))).toBe(
        true,
      );
    } finally {
      await extractor.close();
      await rm(bin, { recursive: true, force: true });
    }
  }, 60_000);

  it("falls back to tesseract.js when the executable is missing or older than 4", async () => {
    const missing = createTesseractTextExtractor({ tesseractPath: "/nonexistent/tesseract", workers: 1 });
    const old = await loggingTesseract("echo 'tesseract 3.05.02'");
    const older = createTesseractTextExtractor({ tesseractPath: old.wrapper, workers: 1 });
    try {
      expect(missing.engine).toBe("wasm");
      expect(older.engine).toBe("wasm");
      const { document, image } = await page();
      const plain = await older.extract({ model: "tesseract", image, format: "plain" });
      expect(characterErrorRate(plain, document.plain)).toBeLessThanOrEqual(0.02);
      // Read by tesseract.js: the old executable was asked its version and nothing else.
      expect(old.calls()).toEqual(["--version"]);
      expect(childProcesses({ name: "tesseract" })).toEqual([]);
    } finally {
      await Promise.all([missing.close(), older.close()]);
      await rm(old.bin, { recursive: true, force: true });
    }
  }, 60_000);

  it("still refuses an explicit native engine without a usable executable", async () => {
    const old = await loggingTesseract("echo 'tesseract 3.05.02'");
    try {
      expect(() => createTesseractTextExtractor({ engine: "native", tesseractPath: old.wrapper })).toThrow(
        /tesseract 4 or later/,
      );
    } finally {
      await rm(old.bin, { recursive: true, force: true });
    }
  });
});
