// Formats on both codecs, side by side in one run: for a photo-like 1920x1280 JPEG, the time of a
// transform to each format (jpeg, png, webp, avif, gif: the same JPEG decode plus that format's
// encode), the time to decode the result (codec.sample at full size), and the output bytes. Prints
// AVIF's encode cost relative to WebP's per codec (target on sharp: at most 4x), then the peak RSS
// of a 100-frame 320x240 GIF resized to 160x120 (each codec in a fresh child process).
// Usage: node bench/formats.mjs [--rounds 3] [--formats jpeg,png,webp,avif,gif]
// Run `pnpm build` first (the codecs are imported from their dist).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import sharp from "sharp";
import { fixture } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    formats: { type: "string", default: "jpeg,png,webp,avif,gif" },
    child: { type: "string" },
  },
});
const BLACK = { r: 0, g: 0, b: 0, alpha: 1 };
const LIMITS = { maxInputPixels: 50_000_000 };

function makeCodec(name) {
  return name === "sharp" ? createSharpCodec() : createJimpCodec({ workers: 0 });
}

/** Peak resident set size of this process so far, bytes (Linux VmHWM). */
function peakRss() {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

if (values.child !== undefined) {
  // Child: a 100-frame animation through resize on one codec; prints the peak RSS before and after.
  const frames = 100;
  const strip = Buffer.alloc(320 * 240 * frames * 4);
  for (let frame = 0; frame < frames; frame += 1) {
    for (let offset = frame * 320 * 240 * 4; offset < (frame + 1) * 320 * 240 * 4; offset += 4) {
      strip[offset] = (frame * 5) & 255;
      strip[offset + 1] = (offset >> 8) & 255;
      strip[offset + 2] = 128;
      strip[offset + 3] = 255;
    }
  }
  const gif = await sharp(strip, { raw: { width: 320, height: 240 * frames, channels: 4, pageHeight: 240 } })
    .gif({ effort: 1, delay: new Array(frames).fill(40) })
    .toBuffer();
  const codec = makeCodec(values.child);
  const before = peakRss();
  const started = performance.now();
  const result = await codec.transform({
    input: gif,
    steps: [{ type: "resize", width: 160, height: 120, fit: "fill", position: "center", background: BLACK }],
    output: { format: "gif", quality: 90, flattenBackground: BLACK },
    limits: LIMITS,
  });
  const ms = performance.now() - started;
  process.stdout.write(
    `${JSON.stringify({ before, after: peakRss(), ms, frames: result.frames, bytes: result.data.byteLength })}\n`,
  );
  await codec.close?.();
  process.exit(0);
}

const rounds = Number(values.rounds);
const formats = values.formats.split(",");
const source = await fixture();
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

const results = {};
for (const name of ["sharp", "jimp"]) {
  const codec = makeCodec(name);
  results[name] = {};
  for (const format of formats) {
    const encodes = [];
    const decodes = [];
    let bytes = 0;
    let encoded;
    for (let round = 0; round < rounds; round += 1) {
      let started = performance.now();
      encoded = await codec.transform({
        input: source,
        steps: [],
        output: { format, quality: 80, flattenBackground: BLACK },
        limits: LIMITS,
      });
      encodes.push(performance.now() - started);
      bytes = encoded.data.byteLength;
      started = performance.now();
      await codec.sample(encoded.data, 4096, LIMITS);
      decodes.push(performance.now() - started);
    }
    results[name][format] = { encodeMs: median(encodes), decodeMs: median(decodes), bytes };
  }
  await codec.close?.();
}

const pad = (text, width) => String(text).padStart(width);
console.log(`formats at 1920x1280, quality 80, median of ${rounds} (ms; bytes)`);
console.log(
  `${"format".padEnd(7)}${pad("sharp encode", 14)}${pad("decode", 9)}${pad("bytes", 10)}${pad("jimp encode", 14)}${pad("decode", 9)}${pad("bytes", 10)}`,
);
for (const format of formats) {
  const s = results.sharp[format];
  const j = results.jimp[format];
  console.log(
    `${format.padEnd(7)}${pad(s.encodeMs.toFixed(0), 14)}${pad(s.decodeMs.toFixed(0), 9)}${pad(s.bytes, 10)}${pad(j.encodeMs.toFixed(0), 14)}${pad(j.decodeMs.toFixed(0), 9)}${pad(j.bytes, 10)}`,
  );
}
if (formats.includes("avif") && formats.includes("webp")) {
  for (const name of ["sharp", "jimp"]) {
    const ratio = results[name].avif.encodeMs / results[name].webp.encodeMs;
    const target = name === "sharp" ? ` (target <= 4: ${ratio <= 4 ? "met" : "NOT met"})` : "";
    console.log(`${name}: AVIF encode / WebP encode = ${ratio.toFixed(2)}${target}`);
  }
}

console.log("\n100-frame 320x240 GIF resized to 160x120 (fresh process per codec)");
for (const name of ["sharp", "jimp"]) {
  const output = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--child", name], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let text = "";
    child.stdout.on("data", (chunk) => {
      text += chunk;
    });
    child.once("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`child exited ${code}`))));
  });
  const { before, after, ms, frames, bytes } = JSON.parse(output);
  console.log(
    `${name}: ${frames} frames kept, ${ms.toFixed(0)} ms, ${bytes} bytes; peak RSS ${(after / 1e6).toFixed(0)} MB (${((after - before) / 1e6).toFixed(0)} MB above the process before the job)`,
  );
}
