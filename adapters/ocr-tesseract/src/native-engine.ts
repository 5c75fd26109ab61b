import { spawnSync } from "node:child_process";
import { cropPage, pgmHeader } from "./grey-page.js";
import { parseHocr } from "./hocr.js";
import type { PageReader } from "./reader-pool.js";
import { ResidentTesseract } from "./resident-tesseract.js";

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
 * One resident native process (see {@link ResidentTesseract}), started on first use, in page
 * segmentation mode 4: pages are segmented into blocks without a column split (the layout step
 * finds columns from word boxes: the document suite reads the same as in mode 3), and a table
 * region cut from the page is read with a zone file covering it, which makes tesseract read it as
 * one block of text (mode 6), so short isolated cells are kept: one process per worker, where a
 * second one in mode 6 beside it (tesseract's mode is fixed per process) would cost 35-47 MB more.
 */
export function nativeReader(binary: string, tessdata: string, idleMs: number): PageReader {
  const tesseract = new ResidentTesseract({
    binary,
    tessdata,
    language: "eng",
    psm: 4,
    scratch: tessdata,
    idleMs,
  });
  const controller = new AbortController();
  return {
    async readPage(page, area) {
      // The PGM is written as its header and the pixels, without a joined copy; the whole page's
      // own buffer when the area is the page.
      const whole = area.width === page.width && area.height === page.height;
      const pixels = whole ? page.grey : cropPage(page, area).grey;
      const pgm = [pgmHeader(area.width, area.height), pixels];
      return parseHocr(await tesseract.read(pgm, controller.signal), area.left, area.top);
    },
    async readBlock(page, region) {
      const cut = [pgmHeader(region.width, region.height), cropPage(page, region).grey];
      const zones = [{ left: 0, top: 0, width: region.width, height: region.height }];
      return parseHocr(await tesseract.read(cut, controller.signal, zones), region.left, region.top);
    },
    async terminate() {
      controller.abort(new Error("terminated"));
      tesseract.close();
    },
  };
}
