import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { readdir, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { characterErrorRate, renderDocument } from "@pixport/testing";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { parseHocr } from "../src/hocr.js";
import { formatZones, RESIDENT_TUNABLES, ResidentTesseract, residentEnv } from "../src/resident-tesseract.js";
import { unpackTraineddata } from "../src/traineddata.js";

/**
 * The resident native process: pages in a row, idle exit, restart after a failure, zones, not
 * holding the event loop, pages and tables in one process, and killing a page whose caller gave
 * up. Needs the system's tesseract executable (Debian's tesseract-ocr, which `.ci/run` installs).
 */

const _tessdataDirectories = async (pid: number) =>
  (await readdir(tmpdir())).filter((name) => name.startsWith(`pixport-tessdata-${pid}-`));

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
