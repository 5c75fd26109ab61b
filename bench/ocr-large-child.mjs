// Child of bench/ocr-large-page.mjs: the built @pixport/ocr-tesseract extractor (one worker, the
// options of argv[3] as JSON) warmed up on a small rendered line, then reading the PNG of argv[2]
// once in plain text. Prints one JSON line: the call's time, the text and the process's own peak
// RSS (VmHWM; the native engine's tesseract is sampled by the parent).
import { readFile } from "node:fs/promises";
import { createAllocatorReleaser, limitMallocArenas } from "@pixport/allocator";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import sharp from "sharp";
import { statusBytes } from "./lib.mjs";

// The memory hooks a library host injects (README of @pixport/ocr-tesseract).
const extractor = createTesseractTextExtractor({
  workers: 1,
  timeoutMs: 3_600_000,
  memoryReleaser: (engine) =>
    createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" }),
  limitMallocArenas,
  ...JSON.parse(process.argv[3]),
});
const warmUp = await sharp(
  Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="600" height="100"><rect width="100%" height="100%" fill="white"/>' +
      '<text x="20" y="60" font-family="DejaVu Sans" font-size="32">Warm up the worker</text></svg>',
  ),
)
  .png()
  .toBuffer();
await extractor.extract({
  model: "tesseract",
  image: { data: new Uint8Array(warmUp), mimeType: "image/png", width: 600, height: 100 },
  format: "plain",
});
const data = new Uint8Array(await readFile(process.argv[2]));
const { width, height } = await sharp(data).metadata();
const started = performance.now();
const text = await extractor.extract({
  model: "tesseract",
  image: { data, mimeType: "image/png", width, height },
  format: "plain",
});
const ms = performance.now() - started;
await extractor.close();
console.log(JSON.stringify({ ms, text, peakRss: statusBytes(process.pid, "VmHWM") }));
