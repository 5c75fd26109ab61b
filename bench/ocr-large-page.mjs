// A large page of small print, read by the OCR library with its page cap (maxPagePixels, default
// 16 MP) and without it, beside Debian's tesseract CLI on the same PNG (page segmentation mode 3,
// OMP_THREAD_LIMIT=1, installed when missing, as in bench/ocr.mjs).
// The page (default 4000 x 2500, DejaVu Sans at 11 px, 48 lines of three phrases spread over its
// width and height) has text about 13 px high: the extractor scales text to about 40 px, so without
// the cap it would hand tesseract about 90 MP, with it 16 MP. Prints, per row: plain-text character
// error rate against the source, the time of the one call, and the peak RSS of the reading
// process tree (sampled every 10 ms; the CLI's from /usr/bin/time).
// Each library row runs in a child process of its own (bench/ocr-large-child.mjs), the extractor
// warmed up on a small page first.
// Usage: npx --yes pnpm@12 run build && npx tsx --conditions=pixport-source bench/ocr-large-page.mjs
//   [--width 4000] [--height 2500] [--font 11] [--engine native|wasm] [--uncapped false]
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { characterErrorRate } from "../packages/testing/src/fixtures/documents.ts";
import { ensureTesseractCli, sampleTree } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    width: { type: "string", default: "4000" },
    height: { type: "string", default: "2500" },
    font: { type: "string", default: "11" },
    engine: { type: "string", default: "native" },
    uncapped: { type: "string", default: "true" },
  },
});
const width = Number(values.width);
const height = Number(values.height);
const font = Number(values.font);
const here = path.dirname(new URL(import.meta.url).pathname);
const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

ensureTesseractCli();

// The page: 48 lines, each of three phrases at fixed columns, spread evenly down the page.
const words =
  "the quick brown fox jumps over lazy dogs while five boxing wizards pack my box with dozen liquor jugs".split(
    " ",
  );
const phrase = (seed) =>
  Array.from({ length: 7 }, (_, index) => words[(seed * 7 + index * 3) % words.length]).join(" ");
const lines = 48;
const rows = [];
let svgText = "";
for (let line = 0; line < lines; line += 1) {
  const y = Math.round(font * 3 + (line * (height - font * 6)) / (lines - 1));
  const cells = [0, 1, 2].map((column) => phrase(line * 3 + column));
  rows.push(cells.join(" "));
  cells.forEach((cell, column) => {
    svgText += `<text x="${Math.round(font * 3 + (column * width) / 3)}" y="${y}">${cell}</text>`;
  });
}
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
<rect width="100%" height="100%" fill="white"/>
<g font-family="DejaVu Sans" font-size="${font}" fill="black">${svgText}</g></svg>`;
const directory = await mkdtemp(path.join(tmpdir(), "pixport-ocr-large-"));
const page = path.join(directory, "page.png");
await sharp(Buffer.from(svg)).flatten({ background: "#ffffff" }).png().toFile(page);
const source = rows.join("\n");
console.log(`page ${width} x ${height}, ${font} px text, ${source.length} characters`);

const results = [];
{
  const run = spawnSync("/usr/bin/time", ["-f", "%e %M", "tesseract", page, "-", "--psm", "3"], {
    env: { ...process.env, OMP_THREAD_LIMIT: "1" },
    encoding: "utf8",
    maxBuffer: 64 * 2 ** 20,
  });
  const [seconds, kilobytes] = run.stderr.trim().split("\n").at(-1).split(" ").map(Number);
  results.push({ name: "cli", ms: seconds * 1000, peak: kilobytes * 1024, text: run.stdout });
}

async function library(name, options) {
  const child = spawn(
    process.execPath,
    [path.join(here, "ocr-large-child.mjs"), page, JSON.stringify({ engine: values.engine, ...options })],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => (out += chunk));
  // The tree is sampled from the start; the warm-up page is small, so the peak is the large page's.
  const stop = sampleTree(child.pid);
  const code = await new Promise((resolve) => child.once("exit", resolve));
  const peak = stop();
  if (code !== 0) throw new Error(`${name}: ocr-large-child exited ${code}`);
  const answer = JSON.parse(out.trim().split("\n").at(-1));
  results.push({ name, ms: answer.ms, peak: Math.max(peak, answer.peakRss), text: answer.text });
}

await library(`library ${values.engine}`, {});
if (values.uncapped !== "false") {
  await library(`library ${values.engine} uncapped`, { maxPagePixels: 200_000_000 });
}
await rm(directory, { recursive: true, force: true });

const cli = results[0];
for (const result of results) {
  console.log(
    `${result.name.padEnd(26)} plain CER ${characterErrorRate(result.text, source).toFixed(4)}  ` +
      `${(result.ms / 1000).toFixed(1)} s (${(result.ms / cli.ms).toFixed(2)}x cli)  peak RSS ${mb(result.peak)}`,
  );
}
