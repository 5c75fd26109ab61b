import { spawn, spawnSync } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import type { OcrBlock, OcrBox, OcrLine, OcrParagraph, OcrWord } from "./layout.js";

/** Where a native tesseract's output goes: the region read, in page px. */
export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

const TEMP_PREFIX = "pixport-tessdata-";

/**
 * The `tesseract` executable's major version, or why it cannot be used (missing, not runnable, or
 * older than 4, which has no LSTM engine). Checked once when an extractor is created.
 */
export function checkNativeTesseract(binary: string): number {
  const probe = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (probe.error !== undefined || probe.status !== 0) {
    const why = probe.error?.message ?? `exit ${probe.status}: ${(probe.stderr ?? "").trim().slice(0, 200)}`;
    throw new Error(
      `engine "native" needs the tesseract executable (${binary}): ${why}. Install it (Debian: apt-get install tesseract-ocr) or use engine "wasm".`,
    );
  }
  const match = /tesseract (?:v)?(\d+)\.(\d+)/.exec(`${probe.stdout}${probe.stderr}`);
  const major = Number(match?.[1] ?? 0);
  if (major < 4) {
    throw new Error(
      `engine "native" needs tesseract 4 or later (its LSTM engine); ${binary} is ${match?.[0] ?? "unknown"}.`,
    );
  }
  return major;
}

/**
 * The traineddata of `langPath` (gzipped, as tesseract.js reads it) unpacked for the native
 * engine into a new private temporary directory (`$TMPDIR/pixport-tessdata-<pid>-*`, mode 0700),
 * so both engines read the same model. Directories left by owners that crashed are removed first.
 */
export async function unpackTraineddata(langPath: string, language: string): Promise<string> {
  const entries = await readdir(tmpdir()).catch(() => [] as string[]);
  await Promise.all(
    entries.map(async (name) => {
      if (!name.startsWith(TEMP_PREFIX)) return;
      const pid = Number(name.slice(TEMP_PREFIX.length).split("-")[0]);
      if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return;
      try {
        process.kill(pid, 0);
        return; // its owner still runs
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") return;
      }
      await rm(path.join(tmpdir(), name), { recursive: true, force: true });
    }),
  );
  const directory = await mkdtemp(path.join(tmpdir(), `${TEMP_PREFIX}${process.pid}-`));
  try {
    await pipeline(
      createReadStream(path.join(langPath, `${language}.traineddata.gz`)),
      createGunzip(),
      createWriteStream(path.join(directory, `${language}.traineddata`), { mode: 0o600 }),
    );
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  return directory;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeHtml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function boxOf(title: string, dx: number, dy: number): OcrBox | undefined {
  const match = /\bbbox (-?\d+) (-?\d+) (-?\d+) (-?\d+)/.exec(title);
  if (match === null) return undefined;
  return {
    x0: Number(match[1]) + dx,
    y0: Number(match[2]) + dy,
    x1: Number(match[3]) + dx,
    y1: Number(match[4]) + dy,
  };
}

/** hOCR's line classes (tesseract writes headers, floating text and captions as lines too). */
const LINE_CLASSES = new Set(["ocr_line", "ocr_header", "ocr_textfloat", "ocr_caption"]);

/**
 * Tesseract's hOCR as the layout the converter reads (blocks, paragraphs, lines with their row
 * height and baseline, words with boxes), the same structure tesseract.js answers: a line's
 * `x_size` is its row height, and its `baseline` (slope and offset from the bottom-left corner of
 * its box) becomes the baseline's two ends. `dx`/`dy` shift every box (a region read on its own).
 */
export function parseHocr(hocr: string, dx = 0, dy = 0): OcrBlock[] {
  const blocks: { paragraphs: OcrParagraph[] }[] = [];
  let paragraphs: OcrParagraph[] | undefined;
  let lines: OcrLine[] | undefined;
  let words: OcrWord[] | undefined;
  const tag = /<(?:div|p|span)\b[^>]*?\bclass=(["'])([a-z_]+)\1[^>]*?\btitle=(["'])(.*?)\3[^>]*>/g;
  for (let match = tag.exec(hocr); match !== null; match = tag.exec(hocr)) {
    const kind = match[2] as string;
    const title = match[4] as string;
    if (kind === "ocr_carea") {
      paragraphs = [];
      blocks.push({ paragraphs });
      lines = undefined;
      words = undefined;
    } else if (kind === "ocr_par") {
      if (paragraphs === undefined) {
        paragraphs = [];
        blocks.push({ paragraphs });
      }
      lines = [];
      paragraphs.push({ lines });
      words = undefined;
    } else if (LINE_CLASSES.has(kind)) {
      const bbox = boxOf(title, dx, dy);
      if (bbox === undefined) continue;
      if (lines === undefined) {
        lines = [];
        if (paragraphs === undefined) {
          paragraphs = [];
          blocks.push({ paragraphs });
        }
        paragraphs.push({ lines });
      }
      words = [];
      const size = /\bx_size (-?[\d.]+)/.exec(title);
      const base = /\bbaseline (-?[\d.]+) (-?[\d.]+)/.exec(title);
      let baseline: OcrLine["baseline"] = null;
      if (base !== null) {
        const slope = Number(base[1]);
        const offset = Number(base[2]);
        baseline = {
          x0: bbox.x0,
          y0: bbox.y1 + offset,
          x1: bbox.x1,
          y1: bbox.y1 + offset + slope * (bbox.x1 - bbox.x0),
        };
      }
      lines.push({
        words,
        bbox,
        rowAttributes: size === null ? null : { rowHeight: Number(size[1]) },
        baseline,
      });
    } else if (kind === "ocrx_word" && words !== undefined) {
      const bbox = boxOf(title, dx, dy);
      const end = hocr.indexOf("</span>", tag.lastIndex);
      if (bbox === undefined || end < 0) continue;
      // Tesseract may wrap a word in <strong>/<em> (font info); the text is what is left.
      const text = unescapeHtml(hocr.slice(tag.lastIndex, end).replace(/<[^>]*>/g, "")).trim();
      if (text !== "") words.push({ text, bbox });
    }
  }
  return blocks;
}

/**
 * Runs the native `tesseract` on one image (PGM or any format Leptonica reads, on its stdin) and answers its hOCR, LSTM engine, one
 * OpenMP thread (`OMP_THREAD_LIMIT=1`: concurrency comes from the extractor's `workers`).
 * `signal` kills the process at once.
 */
export function runNativeTesseract(options: {
  binary: string;
  tessdata: string;
  language: string;
  image: Buffer;
  psm: number;
  signal: AbortSignal;
}): Promise<string> {
  const { binary, tessdata, language, image, psm, signal } = options;
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const child = spawn(
      binary,
      [
        "--tessdata-dir",
        tessdata,
        "stdin",
        "stdout",
        "-l",
        language,
        "--oem",
        "1",
        "--psm",
        String(psm),
        "-c",
        "preserve_interword_spaces=0",
        "-c",
        "tessedit_create_hocr=1",
      ],
      { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, stdio: ["pipe", "pipe", "pipe"] },
    );
    const out: Buffer[] = [];
    let err = "";
    const onAbort = () => child.kill("SIGKILL");
    signal.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      if (err.length < 4096) err += chunk.toString();
    });
    // A process that dies early closes its stdin; the exit answers that.
    child.stdin.on("error", () => undefined);
    child.stdin.end(image);
    child.once("error", (error) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
    child.once("close", (code, killedBy) => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) reject(signal.reason);
      else if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new Error(`tesseract exited (${killedBy ?? `code ${code}`}): ${err.trim().slice(-300)}`));
    });
  });
}
