// Child of bench/ocr.mjs: reads every PNG of a directory with the built @pixport/ocr-tesseract
// extractor (one worker, warmed up first; engine argv[3], wasm or native), one page at a time, in
// plain and in markdown, and prints one JSON line per page, then its own peak RSS (worker threads
// included; not the native engine's tesseract processes, which bench/ocr.mjs samples) and how long
// the extractor held its event loop: a 5 ms interval's lateness (as bench/event-loop.mjs measures
// it), p99 and longest over the pages.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import sharp from "sharp";

const directory = process.argv[2];
const extractor = createTesseractTextExtractor({ workers: 1, engine: process.argv[3] ?? "wasm" });
const files = (await readdir(directory)).filter((name) => name.endsWith(".png")).sort();
const load = async (file) => {
  const data = new Uint8Array(await readFile(path.join(directory, file)));
  const { width, height } = await sharp(data).metadata();
  return { data, mimeType: "image/png", width, height };
};
// Warm-up: the worker starts on the first call.
await extractor.extract({ model: "tesseract", image: await load(files[0]), format: "plain" });
const delays = [];
let last = performance.now();
const ticker = setInterval(() => {
  const now = performance.now();
  delays.push(Math.max(0, now - last - 5));
  last = now;
}, 5);
for (const file of files) {
  const image = await load(file);
  let start = performance.now();
  const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
  const plainMs = performance.now() - start;
  start = performance.now();
  const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
  const markdownMs = performance.now() - start;
  console.log(JSON.stringify({ file, plain, plainMs, markdown, markdownMs }));
}
clearInterval(ticker);
delays.sort((a, b) => a - b);
const loopP99 = delays[Math.min(delays.length - 1, Math.floor(delays.length * 0.99))];
await extractor.close();
console.log(
  JSON.stringify({ peakRss: process.resourceUsage().maxRSS * 1024, loopP99, loopLongest: delays.at(-1) }),
);
