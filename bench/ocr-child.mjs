// Child of bench/ocr.mjs: the built @pixport/ocr-tesseract extractor (one worker; engine argv[3],
// wasm or native) reading the PNG pages of a directory (argv[2]) one at a time, on request: it warms
// up on the directory's first page and prints {"ready":true}, then reads each file name that comes
// on its stdin, in plain and in markdown, and prints one JSON line per page. When stdin ends it
// prints its own peak RSS (worker threads included; not the native engine's tesseract processes,
// which bench/ocr.mjs samples) and how long the extractor held its event loop while it read: a
// 5 ms interval's lateness (as bench/event-loop.mjs measures it), p99 and longest over the ticks
// that fell while a page was being read (the waits between requests do not dilute it).
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { createAllocatorReleaser, limitMallocArenas } from "@pixport/allocator";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import sharp from "sharp";
import { statusBytes } from "./lib.mjs";

const directory = process.argv[2];
// The memory hooks a library host injects (README of @pixport/ocr-tesseract).
const extractor = createTesseractTextExtractor({
  workers: 1,
  engine: process.argv[3] ?? "wasm",
  memoryReleaser: (engine) =>
    createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" }),
  limitMallocArenas,
});
const load = async (file) => {
  const data = new Uint8Array(await readFile(path.join(directory, file)));
  const { width, height } = await sharp(data).metadata();
  return { data, mimeType: "image/png", width, height };
};
// Warm-up: the worker starts on the first call.
const first = (await readdir(directory)).filter((name) => name.endsWith(".png")).sort()[0];
await extractor.extract({ model: "tesseract", image: await load(first), format: "plain" });

const delays = [];
let reading = false;
let readSinceTick = false;
let last = performance.now();
const ticker = setInterval(() => {
  const now = performance.now();
  if (reading || readSinceTick) delays.push(Math.max(0, now - last - 5));
  readSinceTick = reading;
  last = now;
}, 5);
console.log(JSON.stringify({ ready: true }));

for await (const file of createInterface({ input: process.stdin })) {
  if (file === "") continue;
  const image = await load(file);
  reading = true;
  readSinceTick = true;
  let start = performance.now();
  const plain = await extractor.extract({ model: "tesseract", image, format: "plain" });
  const plainMs = performance.now() - start;
  start = performance.now();
  const markdown = await extractor.extract({ model: "tesseract", image, format: "markdown" });
  const markdownMs = performance.now() - start;
  reading = false;
  console.log(JSON.stringify({ file, plain, plainMs, markdown, markdownMs }));
}
clearInterval(ticker);
delays.sort((a, b) => a - b);
const loopP99 = delays[Math.min(delays.length - 1, Math.floor(delays.length * 0.99))];
await extractor.close();
console.log(
  // VmHWM, not getrusage's maxRSS: Linux carries a forked child's high-water mark across exec, so
  // maxRSS started at the bench parent's RSS when it spawned this process (up to about 190 MB here).
  JSON.stringify({ peakRss: statusBytes("self", "VmHWM"), loopP99, loopLongest: delays.at(-1) }),
);
