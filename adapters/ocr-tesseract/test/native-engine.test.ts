import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { characterErrorRate, renderDocument } from "@pixport/testing";
import { describe, expect, it } from "vitest";
import { createTesseractTextExtractor } from "../src/index.js";
import { parseHocr } from "../src/native.js";

/**
 * `engine: "native"`: the system's tesseract executable (Debian's tesseract-ocr, which `.ci/run`
 * installs), one process per page. The document suite and the TextExtractor conformance suite run
 * on it too (document-suite.test.ts, text-extractor-conformance.test.ts); this file covers what is
 * its own: the hOCR reader, the missing executable, killing a page whose caller gave up, and the
 * unpacked traineddata's temporary directory.
 */

const tessdataDirectories = async (pid: number) =>
  (await readdir(tmpdir())).filter((name) => name.startsWith(`pixport-tessdata-${pid}-`));

/** Live `tesseract` processes whose parent is this process (read from /proc, as `ps` may be absent). */
function nativeChildren(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "tesseract" && ppid === process.pid) found.push(Number(entry));
    } catch {
      // exited while being read
    }
  }
  return found;
}

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
    const document = await renderDocument(
      {
        name: "deadline",
        width: 1200,
        blocks: [
          { kind: "heading", level: 1, text: "Native Deadline" },
          { kind: "paragraph", lines: ["The process reading this page is killed when the call gives up."] },
        ],
      },
      { format: "png", scale: 1 },
    );
    const image = {
      data: document.data,
      mimeType: "image/png" as const,
      width: document.width,
      height: document.height,
    };
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
        seen = nativeChildren();
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
