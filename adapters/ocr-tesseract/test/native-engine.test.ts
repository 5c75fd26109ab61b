import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { characterErrorRate, childProcesses, type DocumentSpec, renderDocument } from "@pixport/testing";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { parseHocr } from "../src/hocr.js";
import { createTesseractTextExtractor } from "../src/index.js";
import { formatZones, RESIDENT_TUNABLES, ResidentTesseract, residentEnv } from "../src/resident-tesseract.js";
import { unpackTraineddata } from "../src/traineddata.js";

/**
 * `engine: "native"`: the system's tesseract executable (Debian's tesseract-ocr, which `.ci/run`
 * installs), resident processes that read page after page. The document suite and the TextExtractor conformance suite run
 * on it too (document-suite.test.ts, text-extractor-conformance.test.ts); this file covers what is
 * its own: the hOCR reader, the resident process (pages in a row, idle exit, restart after a
 * failure, zones, not holding the event loop, pages and tables in one process), the missing executable, killing a page whose caller gave up, and the
 * unpacked traineddata's temporary directory.
 */

const tessdataDirectories = async (pid: number) =>
  (await readdir(tmpdir())).filter((name) => name.startsWith(`pixport-tessdata-${pid}-`));

describe("parseHocr", () => {
  const hocr = `<?xml version="1.0" encoding="UTF-8"?>
<body>
  <div class='ocr_page' id='page_1' title='image "stdin"; bbox 0 0 1200 800; ppageno 0'>
   <div class='ocr_carea' id='block_1_1' title="bbox 84 101 754 169">
    <p class='ocr_par' id='par_1_1' lang='eng' title="bbox 84 101 754 169">
     <span class='ocr_header' id='line_1_1' title="bbox 84 101 754 169; baseline 0.01 -12; x_size 60.5; x_descenders 12; x_ascenders 18">
      <span class='ocrx_word' id='word_1_1' title='bbox 84 101 300 169; x_wconf 96'>Fish</span>
      <span class='ocrx_word' id='word_1_2' title='bbox 320 101 754 169; x_wconf 95'>&amp;&#39;Chips&lt;&quot;&gt;</span>
     </span>
    </p>
   </div>
   <div class='ocr_photo' id='block_1_2' title="bbox 10 300 500 600"></div>
   <div class='ocr_carea' id='block_1_3' title="bbox 84 700 400 740">
    <p class='ocr_par' id='par_1_2' lang='eng' title="bbox 84 700 400 740">
     <span class='ocr_line' id='line_1_2' title="bbox 84 700 400 740; baseline 0 0; x_size 30">
      <span class='ocrx_word' id='word_1_3' title='bbox 84 700 150 740; x_wconf 90'><strong>one</strong></span>
      <span class='ocrx_word' id='word_1_4' title='bbox 160 700 400 740; x_wconf 10'> </span>
     </span>
     <span class='ocr_line' id='line_1_3' title="bbox 84 745 400 780">
      <span class='ocrx_word' id='word_1_5' title='bbox 84 745 150 780; x_wconf 90'>two</span>
     </span>
    </p>
   </div>
  </div>
</body>`;

  it("reads blocks, paragraphs, lines (headers too) and words with boxes, row heights and baselines", () => {
    const blocks = parseHocr(hocr);
    expect(blocks).toHaveLength(2);
    const header = blocks[0]!.paragraphs[0]!.lines[0]!;
    expect(header.words.map((word) => word.text)).toEqual(["Fish", "&'Chips<\">"]);
    expect(header.bbox).toEqual({ x0: 84, y0: 101, x1: 754, y1: 169 });
    expect(header.rowAttributes).toEqual({ rowHeight: 60.5 });
    // From the bottom-left corner (84, 169): offset -12, slope 0.01 over 670 px.
    expect(header.baseline?.x0).toBe(84);
    expect(header.baseline?.y0).toBe(157);
    expect(header.baseline?.x1).toBe(754);
    expect(header.baseline?.y1).toBeCloseTo(157 + 6.7, 6);
    const lines = blocks[1]!.paragraphs[0]!.lines;
    // Markup inside a word is dropped, blank words are left out; a line without x_size has none.
    expect(lines.map((line) => line.words.map((word) => word.text))).toEqual([["one"], ["two"]]);
    expect(lines[1]!.rowAttributes).toBeNull();
    expect(lines[1]!.baseline).toBeNull();
  });

  it("shifts every box by the region's offset", () => {
    const [block] = parseHocr(hocr, 1000, 2000);
    const line = block!.paragraphs[0]!.lines[0]!;
    expect(line.bbox).toEqual({ x0: 1084, y0: 2101, x1: 1754, y1: 2169 });
    expect(line.words[0]!.bbox).toEqual({ x0: 1084, y0: 2101, x1: 1300, y1: 2169 });
    expect(line.baseline?.y0).toBe(2157);
  });

  it("answers no blocks for a page without text", () => {
    expect(parseHocr("<div class='ocr_page' id='page_1' title='bbox 0 0 10 10'></div>")).toEqual([]);
  });
});

/** A rendered document's pixels as the binary PGM both engines read. */
async function pgmOf(name: string, lines: string[]): Promise<{ pgm: Buffer; text: string }> {
  const document = await renderDocument(
    { name, width: 1200, blocks: [{ kind: "paragraph", lines }] },
    { format: "png", scale: 1 },
  );
  const { data, info } = await sharp(document.data)
    .flatten({ background: "#ffffff" })
    .grayscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    pgm: Buffer.concat([Buffer.from(`P5\n${info.width} ${info.height}\n255\n`, "latin1"), data]),
    text: document.plain,
  };
}

const wordsOf = (hocr: string) =>
  parseHocr(hocr)
    .flatMap((block) =>
      block.paragraphs.flatMap((p) => p.lines.map((l) => l.words.map((w) => w.text).join(" "))),
    )
    .join("\n");

describe("ResidentTesseract", () => {
  const langPath = path.join(
    path.dirname(createRequire(import.meta.url).resolve("@tesseract.js-data/eng/package.json")),
    "4.0.0_best_int",
  );

  it("reads page after page in one process, each page as it reads alone, and removes the page files", async () => {
    const tessdata = await unpackTraineddata(langPath, "eng");
    const first = await pgmOf("first", ["Resident processes keep their model loaded."]);
    const second = await pgmOf("second", ["A second page with other words: 12345 and 678."]);
    const options = { binary: "tesseract", tessdata, language: "eng", psm: 3, scratch: tessdata };
    const resident = new ResidentTesseract(options);
    const alone = new ResidentTesseract(options);
    const signal = new AbortController().signal;
    try {
      const a = await resident.read(first.pgm, signal);
      const pid = resident.pid;
      expect(pid).toBeGreaterThan(0);
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      expect(environment).toContain("OMP_THREAD_LIMIT=1");
      expect(environment.find((entry) => entry.startsWith("GLIBC_TUNABLES="))).toContain(
        "glibc.malloc.mmap_threshold=131072",
      );
      const b = await resident.read(second.pgm, signal);
      const again = await resident.read(first.pgm, signal);
      expect(resident.pid).toBe(pid);
      expect(characterErrorRate(wordsOf(a), first.text)).toBeLessThanOrEqual(0.02);
      expect(characterErrorRate(wordsOf(b), second.text)).toBeLessThanOrEqual(0.02);
      // Nothing carried over from the pages before: the same page gives the same hOCR (its file
      // name and page numbers aside), and the same as a process that read only the second page.
      const unnumbered = (hocr: string) =>
        hocr.replace(/title='image [^']*'/, "").replace(/(page|block|par|line|word)_\d+/g, "$1");
      expect(unnumbered(again)).toBe(unnumbered(a));
      expect(unnumbered(await alone.read(second.pgm, signal))).toBe(unnumbered(b));
      // A page given in parts (the extractor passes a PGM header and the pixels) is written whole:
      // split at odd places, it reads as the joined buffer does.
      const header = second.pgm.indexOf("255\n", 0, "latin1") + 4;
      const middle = header + Math.floor((second.pgm.length - header) / 3) + 1;
      const parts = [second.pgm.subarray(0, 5), second.pgm.subarray(5, middle), second.pgm.subarray(middle)];
      expect(unnumbered(await resident.read(parts, signal))).toBe(unnumbered(b));
      expect((await readdir(tessdata)).sort()).toEqual(["eng.traineddata"]);
    } finally {
      resident.close();
      alone.close();
      await rm(tessdata, { recursive: true, force: true });
    }
  }, 60_000);

  it("exits when idle, starts again for the next page, and survives a page it cannot read", async () => {
    const tessdata = await unpackTraineddata(langPath, "eng");
    const page = await pgmOf("idle", ["Idle processes give their memory back."]);
    const resident = new ResidentTesseract({
      binary: "tesseract",
      tessdata,
      language: "eng",
      psm: 3,
      scratch: tessdata,
      idleMs: 50,
    });
    const signal = new AbortController().signal;
    try {
      await resident.read(page.pgm, signal);
      const pid = resident.pid as number;
      const since = performance.now();
      while (existsSync(`/proc/${pid}`) && performance.now() - since < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(existsSync(`/proc/${pid}`)).toBe(false);
      expect(resident.pid).toBeUndefined();
      const text = wordsOf(await resident.read(page.pgm, signal));
      expect(resident.pid).not.toBe(pid);
      expect(characterErrorRate(text, page.text)).toBeLessThanOrEqual(0.02);
      // Not an image: tesseract gives up (and exits); the error says why, the next page reads.
      await expect(resident.read(Buffer.from("not an image"), signal)).rejects.toThrow(
        /tesseract exited .*cannot be read/,
      );
      expect(
        characterErrorRate(wordsOf(await resident.read(page.pgm, signal)), page.text),
      ).toBeLessThanOrEqual(0.02);
    } finally {
      resident.close();
      await rm(tessdata, { recursive: true, force: true });
    }
  }, 60_000);

  it("reads only the zones it is given, each as one block, in the page mode without column finding", async () => {
    const tessdata = await unpackTraineddata(langPath, "eng");
    const page = await pgmOf("zones", [
      "The first line stays inside the zone.",
      "The second line is left out.",
    ]);
    const height = page.pgm.toString("latin1", 0, 32).split(/\s+/).map(Number)[2] as number;
    const width = page.pgm.toString("latin1", 0, 32).split(/\s+/).map(Number)[1] as number;
    const resident = new ResidentTesseract({
      binary: "tesseract",
      tessdata,
      language: "eng",
      psm: 4,
      scratch: tessdata,
    });
    const signal = new AbortController().signal;
    try {
      const whole = wordsOf(await resident.read(page.pgm, signal));
      expect(whole).toContain("second line");
      // The rendered page's lines: find the gap between them from the whole page's line boxes.
      const lines = parseHocr(await resident.read(page.pgm, signal)).flatMap((block) =>
        block.paragraphs.flatMap((p) => p.lines),
      );
      expect(lines).toHaveLength(2);
      const cut = Math.round((lines[0]!.bbox.y1 + lines[1]!.bbox.y0) / 2);
      const zoned = parseHocr(
        await resident.read(page.pgm, signal, [{ left: 0, top: 0, width, height: cut }]),
      );
      const text = zoned
        .flatMap((block) =>
          block.paragraphs.flatMap((p) => p.lines.map((l) => l.words.map((w) => w.text).join(" "))),
        )
        .join("\n");
      expect(characterErrorRate(text, "The first line stays inside the zone.")).toBeLessThanOrEqual(0.03);
      expect(text).not.toContain("second");
      expect(zoned).toHaveLength(1);
      expect(height).toBeGreaterThan(cut);
      // The zone file went with the page file.
      expect((await readdir(tessdata)).sort()).toEqual(["eng.traineddata"]);
    } finally {
      resident.close();
      await rm(tessdata, { recursive: true, force: true });
    }
  }, 60_000);

  it("starts with one OpenMP thread and glibc's fixed mmap threshold, keeping the host's own tunables", () => {
    expect(residentEnv({ PATH: "/bin" })).toEqual({
      PATH: "/bin",
      OMP_THREAD_LIMIT: "1",
      GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=131072",
    });
    expect(residentEnv({ GLIBC_TUNABLES: "glibc.malloc.arena_max=2" }).GLIBC_TUNABLES).toBe(
      "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072",
    );
    // A threshold the host chose is left as it is.
    expect(residentEnv({ GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=65536" }).GLIBC_TUNABLES).toBe(
      "glibc.malloc.mmap_threshold=65536",
    );
    expect(RESIDENT_TUNABLES).toEqual(["glibc.malloc.mmap_threshold=131072"]);
  });

  it("formats zones as UNLV zone file lines", () => {
    expect(formatZones([{ left: 0, top: 10.4, width: 300, height: 99.6 }])).toBe("0 10 300 100 Text\n");
  });

  it("does not keep Node running while idle: a script that never closes the extractor exits", async () => {
    const script = `
      import { createTesseractTextExtractor } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
      import { renderDocument } from "@pixport/testing";
      const document = await renderDocument({ name: "exit", width: 1000, blocks: [{ kind: "paragraph", lines: ["Exit when done."] }] }, { format: "png", scale: 1 });
      const extractor = createTesseractTextExtractor({ engine: "native", workers: 1 });
      const text = await extractor.extract({ model: "tesseract", image: { data: document.data, mimeType: "image/png", width: document.width, height: document.height }, format: "plain" });
      console.log(JSON.stringify(text));
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: path.dirname(new URL(import.meta.url).pathname),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    // Without the release the script would wait for the idle exit (30 s); with it, it ends at once.
    const started = performance.now();
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    expect(JSON.parse(out.trim())).toMatch(/Exit when done/);
    expect(performance.now() - started).toBeLessThan(25_000);
  }, 60_000);
});

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
