// Bytes and visual quality of delivered variants, per format and quality mode.
//
//   npx tsx --conditions=pixport-source bench/bytes.mjs [--codec sharp|jimp] [--calibrate]
//     [--corpus photos|generated|both] [--widths 320,480,640] [--good jpeg=0.985,webp=...]
//     [--levels good,best,eco] [--metric weber|bezkrovny]
//
// Every output is a whole codec.transform() call (decode, resize to the width, encode), as variant
// delivery runs it. SSIM (ssim.js, its default "weber" algorithm on luma) compares each output with
// the lossless reference: the same codec's PNG at the same width, flattened onto black like the
// outputs. Prints, per corpus and mode, the median bytes, the median of each image's bytes / JPEG
// q80 bytes, the median and lowest SSIM, and the median encode time. `--calibrate` sweeps WebP and
// AVIF qualities to find the ones whose median SSIM matches JPEG q80's.
//
// `q_auto` rows are the codec's own automatic quality (`output.autoQuality`, the targets of
// packages/core/src/operations/quality-levels.ts, or `--good format=ssim,...` to try others); their
// "/ default" column is the median of each case's bytes over the same format's fixed default, and
// "time / default" the median of each case's encode time over that fixed default's, "CPU / default"
// the same for the process's CPU time (every thread: libvips encodes on its own).
//
// Two corpora, reported apart: "photos", the 16 real photographs of scikit-image's sample data
// (portrait, animal, still life, scene, landscape, space, medical, microscopy, grayscale, scanned
// and plain text, textures, a transparent logo; fetched outside the work tree by
// scripts/fetch-photos.mjs, which this bench runs first), and "generated" (bench/bytes-generated.mjs).
// Each image at 3 widths (320, 480 and 640 px, never above the image's own width).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import sharp from "sharp";
import { ssim } from "ssim.js";
import { autoQualityTarget } from "../packages/core/src/operations/quality-levels.ts";
import { photoCorpus } from "../packages/testing/src/fixtures/photos.ts";
import { fetchPhotos } from "../scripts/fetch-photos.mjs";
import { generatedCorpus } from "./bytes-generated.mjs";

const args = process.argv.slice(2);
const codecName = args.includes("--codec") ? args[args.indexOf("--codec") + 1] : "sharp";
const calibrate = args.includes("--calibrate");
const corpusName = args.includes("--corpus") ? args[args.indexOf("--corpus") + 1] : "both";
// `--metric bezkrovny`: ssim.js's faster algorithm, the one the codecs' automatic quality measures with.
const metric = args.includes("--metric") ? args[args.indexOf("--metric") + 1] : "weber";
const codec = codecName === "jimp" ? createJimpCodec() : createSharpCodec();
const WIDTHS = args.includes("--widths")
  ? args[args.indexOf("--widths") + 1].split(",").map(Number)
  : [320, 480, 640];
const limits = { maxInputPixels: 50_000_000 };
const BLACK = { r: 0, g: 0, b: 0, alpha: 1 };

async function transform(input, size, output) {
  const { width, height } = size;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const encoded = await codec.transform({
    input,
    steps: [{ type: "resize", width, height, fit: "fill", position: "center", background: BLACK }],
    output: { flattenBackground: BLACK, ...output },
    limits,
  });
  const cpu = process.cpuUsage(cpuBefore);
  return { data: encoded.data, ms: performance.now() - started, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** RGBA pixels flattened onto black (the outputs' and the reference's common ground). */
async function pixels(bytes) {
  const { data, info } = await sharp(bytes)
    .flatten({ background: "#000000" })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8ClampedArray(data), width: info.width, height: info.height };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

// The defaults of `delivery.defaultQuality` (packages/core/src/operations/deliver-variant.ts).
const defaults = { jpeg: 80, webp: 82, avif: 62 };
// `--webp 80,82` / `--avif 60,64` replace a format's calibration sweep.
const sweep = (format, qualities) => {
  const given = args.includes(`--${format}`)
    ? args[args.indexOf(`--${format}`) + 1].split(",").map(Number)
    : qualities;
  return given.map((quality) => [`${format} q${quality}`, { format, quality }]);
};
const modes = calibrate
  ? [
      ["jpeg q80", { format: "jpeg", quality: 80 }],
      ...sweep("webp", [75, 80, 82, 84, 85]),
      ...sweep("avif", [55, 60, 62, 64, 65, 66, 70]),
    ]
  : [
      ["jpeg q80 (fixed)", { format: "jpeg", quality: 80 }],
      ["webp q80 (fixed)", { format: "webp", quality: 80 }],
      ["avif q80 (old default)", { format: "avif", quality: 80 }],
      [`jpeg default (q${defaults.jpeg})`, { format: "jpeg", quality: defaults.jpeg }],
      [`webp default (q${defaults.webp})`, { format: "webp", quality: defaults.webp }],
      [`avif default (q${defaults.avif})`, { format: "avif", quality: defaults.avif }],
      // What `.auto` answers to `Accept: image/avif,image/webp` (no source is animated here): the
      // smaller of AVIF and WebP at their defaults; its time is both encodes (the source's own
      // format, its fallback, is encoded only when it is predicted smaller, which a photo never is).
      [
        `auto, AVIF-capable Accept (smaller of avif q${defaults.avif}, webp q${defaults.webp})`,
        {
          format: "auto",
          candidates: [
            { format: "avif", quality: defaults.avif },
            { format: "webp", quality: defaults.webp },
          ],
        },
      ],
      ...autoModes(),
    ];

/** The `q_auto` modes: each lossy format at each level, and `auto` with q_auto:good. */
function autoModes() {
  const good = Object.fromEntries(
    (args.includes("--good") ? args[args.indexOf("--good") + 1].split(",") : []).map((pair) => {
      const [format, value] = pair.split("=");
      return [format, Number(value)];
    }),
  );
  const target = (format, level) => {
    const found = autoQualityTarget(codec, format, level);
    if (found === undefined) return undefined;
    return level === "good" && good[format] !== undefined ? { ...found, ssim: good[format] } : found;
  };
  const auto = (format, level) => ({ format, quality: defaults[format], autoQuality: target(format, level) });
  const levels = args.includes("--levels") ? args[args.indexOf("--levels") + 1].split(",") : ["good"];
  const rows = [];
  for (const level of levels) {
    for (const format of ["jpeg", "webp", "avif"]) {
      if (target(format, level) === undefined) continue;
      const name = `${format} q_auto:${level} (ssim ${target(format, level).ssim})`;
      rows.push([name, { ...auto(format, level), against: `${format} default (q${defaults[format]})` }]);
    }
  }
  if (target("avif", "good") !== undefined && target("webp", "good") !== undefined) {
    rows.push([
      "auto + q_auto:good, AVIF-capable Accept (smaller of avif and webp q_auto:good)",
      { format: "auto", candidates: [auto("avif", "good"), auto("webp", "good")] },
    ]);
  }
  return rows;
}

async function measure(images) {
  const rows = new Map(
    modes.map(([name]) => [name, { bytes: [], ratio: [], ssim: [], ms: [], against: [], time: [], cpu: [] }]),
  );
  let cases = 0;
  for (const [name, input] of images) {
    const { width: sourceWidth, height: sourceHeight } = await sharp(input).metadata();
    for (const width of new Set(WIDTHS.map((wanted) => Math.min(wanted, sourceWidth)))) {
      const size = { width, height: Math.max(1, Math.round((sourceHeight * width) / sourceWidth)) };
      cases += 1;
      const reference = await pixels((await transform(input, size, { format: "png", quality: 100 })).data);
      const made = new Map();
      let jpegBytes;
      for (const [mode, output] of modes) {
        const candidates = output.candidates ?? [output];
        if (!candidates.every((one) => codec.capabilities.outputFormats.includes(one.format))) continue;
        let data;
        let ms = 0;
        let cpuMs = 0;
        for (const { against, ...candidate } of candidates) {
          const one = await transform(input, size, candidate);
          ms += one.ms;
          cpuMs += one.cpuMs;
          if (data === undefined || one.data.byteLength < data.byteLength) data = one.data;
        }
        const score = ssim(reference, await pixels(data), { ssim: metric }).mssim;
        jpegBytes ??= data.byteLength;
        made.set(mode, { bytes: data.byteLength, ms, cpuMs });
        const row = rows.get(mode);
        row.bytes.push(data.byteLength);
        row.ratio.push(data.byteLength / jpegBytes);
        row.ssim.push(score);
        row.ms.push(ms);
        const base = output.against === undefined ? undefined : made.get(output.against);
        if (base !== undefined) {
          row.against.push(data.byteLength / base.bytes);
          row.time.push(ms / base.ms);
          row.cpu.push(cpuMs / base.cpuMs);
        }
      }
      process.stderr.write(`${name} @ ${width}\n`);
    }
  }
  return { rows, cases };
}

const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.floor(q * (values.length - 1))];

function report(title, images, { rows, cases }) {
  console.log(
    `\n${title}, codec ${codecName}: ${images.length} images, ${cases} image-width cases (widths ${WIDTHS.join(", ")}), SSIM ${metric}`,
  );
  console.log(
    "| mode | median bytes | / JPEG q80 | / default | median SSIM | p10 SSIM | lowest SSIM | median encode ms | time / default | CPU / default |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const [mode, row] of rows) {
    if (row.bytes.length === 0) {
      console.log(`| ${mode} | not written by this codec | | | | | | | | |`);
      continue;
    }
    const against = row.against.length === 0 ? "" : `${median(row.against).toFixed(2)}x`;
    const time = row.time.length === 0 ? "" : `${median(row.time).toFixed(2)}x`;
    const cpu = row.cpu.length === 0 ? "" : `${median(row.cpu).toFixed(2)}x`;
    console.log(
      `| ${mode} | ${Math.round(median(row.bytes))} | ${median(row.ratio).toFixed(2)}x | ${against} | ${median(row.ssim).toFixed(4)} | ${quantile(row.ssim, 0.1).toFixed(4)} | ${Math.min(...row.ssim).toFixed(4)} | ${median(row.ms).toFixed(1)} | ${time} | ${cpu} |`,
    );
  }
}

const corpora = [];
if (corpusName !== "generated") {
  fetchPhotos();
  const photos = photoCorpus().map((photo) => [`${photo.kind}: ${photo.file}`, readFileSync(photo.path)]);
  corpora.push(["real photographs (scikit-image sample data)", photos]);
}
if (corpusName !== "photos") corpora.push(["generated images", await generatedCorpus()]);
for (const [title, images] of corpora) report(title, images, await measure(images));
await codec.close?.();
process.exit(0);
