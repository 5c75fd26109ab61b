// Bytes and visual quality of delivered variants, per format and quality mode.
//
//   node bench/bytes.mjs [--codec sharp|jimp] [--calibrate]
//
// Every output is a whole codec.transform() call (decode, resize to the width, encode), as variant
// delivery runs it. SSIM (ssim.js, its default "weber" algorithm on luma) compares each output with
// the lossless reference: the same codec's PNG at the same width, flattened onto black like the
// outputs. Prints, per mode, the median bytes, the median of each image's bytes / JPEG q80 bytes,
// the median and lowest SSIM, and the median encode time. `--calibrate` sweeps WebP and AVIF
// qualities to find the ones whose median SSIM matches JPEG q80's.
//
// The corpus: examples/assets/cat.jpg (the only photograph in the repository), crops and a
// recoloured copy of it, two generated photo-like textures, two text-heavy renders, a flat graphic,
// a transparent graphic and examples/assets/logo.png (transparent); each at 3 widths (320, 480 and
// 640 px, never above the image's own width).
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import sharp from "sharp";
import { ssim } from "ssim.js";

const args = process.argv.slice(2);
const codecName = args.includes("--codec") ? args[args.indexOf("--codec") + 1] : "sharp";
const calibrate = args.includes("--calibrate");
const codec = codecName === "jimp" ? createJimpCodec() : createSharpCodec();
const WIDTHS = [320, 480, 640];
const limits = { maxInputPixels: 50_000_000 };
const BLACK = { r: 0, g: 0, b: 0, alpha: 1 };

const asset = (name) => readFileSync(new URL(`../examples/assets/${name}`, import.meta.url));

function texture(width, height, seed, scale) {
  const raw = Buffer.alloc(width * height * 3);
  let state = seed;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      const noise = ((state >> 16) % 48) - 24;
      const wave = Math.sin(x / scale) * Math.cos(y / (scale * 1.7)) * 60;
      const offset = (y * width + x) * 3;
      raw[offset] = Math.max(0, Math.min(255, 120 + wave + noise + (x * 60) / width));
      raw[offset + 1] = Math.max(0, Math.min(255, 100 + wave * 0.6 + noise + (y * 80) / height));
      raw[offset + 2] = Math.max(0, Math.min(255, 90 - wave * 0.5 + noise));
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 95 })
    .toBuffer();
}

/**
 * A raster drawn pixel by pixel (this sharp build reads no SVG): `paint(x, y)` returns RGBA.
 */
function draw(width, height, paint) {
  const raw = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) raw.set(paint(x, y), (y * width + x) * 4);
  }
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}

/** Text-like: rows of 1-2 px strokes in glyph-sized cells (sharp edges, like small type). */
function textLike(ink, paper, seed) {
  let state = seed;
  const glyphs = Array.from({ length: 64 }, () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  });
  return draw(720, 480, (x, y) => {
    const row = Math.floor(y / 24);
    const inRow = y % 24;
    const cell = Math.floor(x / 10);
    const inCell = x % 10;
    if (inRow < 6 || inRow > 19 || inCell > 7 || (cell + row * 7) % 9 === 0) return paper;
    const bits = glyphs[(cell * 31 + row * 17) % 64];
    const stroke =
      (inCell < 2 && bits & 1) ||
      (inCell > 5 && bits & 2) ||
      (inRow < 8 && bits & 4) ||
      (inRow > 17 && bits & 8) ||
      (Math.abs(inRow - 13) < 1 && bits & 16) ||
      (Math.abs(inCell - inRow / 2 + 3) < 1 && bits & 32);
    return stroke ? ink : paper;
  });
}

async function corpus() {
  const cat = asset("cat.jpg");
  return [
    ["photo: cat", cat],
    [
      "photo: cat crop top-left",
      await sharp(cat).extract({ left: 0, top: 0, width: 640, height: 427 }).jpeg({ quality: 95 }).toBuffer(),
    ],
    [
      "photo: cat crop centre",
      await sharp(cat)
        .extract({ left: 160, top: 107, width: 640, height: 427 })
        .jpeg({ quality: 95 })
        .toBuffer(),
    ],
    [
      "photo: cat crop bottom-right",
      await sharp(cat)
        .extract({ left: 320, top: 213, width: 640, height: 427 })
        .jpeg({ quality: 95 })
        .toBuffer(),
    ],
    [
      "photo: cat recoloured",
      await sharp(cat).modulate({ hue: 120, saturation: 1.4 }).jpeg({ quality: 95 }).toBuffer(),
    ],
    ["texture: fine", await texture(800, 600, 7, 6)],
    ["texture: coarse", await texture(800, 600, 11, 40)],
    ["text-like: dark on light", await textLike([17, 17, 17, 255], [250, 250, 250, 255], 3)],
    ["text-like: light on dark", await textLike([238, 238, 238, 255], [27, 40, 56, 255], 5)],
    [
      "flat graphic",
      await draw(720, 480, (x, y) => {
        if ((x - 200) ** 2 + (y - 240) ** 2 < 150 ** 2) return [13, 59, 102, 255];
        if (x >= 380 && x < 640 && y >= 90 && y < 390) return [238, 150, 75, 255];
        if (y > 300 && Math.abs(x - 360) < (y - 300) * 2) return [249, 87, 56, 255];
        return [244, 211, 94, 255];
      }),
    ],
    [
      "transparent graphic",
      await draw(720, 480, (x, y) => {
        if ((x - 240) ** 2 + (y - 240) ** 2 < 200 ** 2) return [42, 157, 143, 204];
        if (x >= 300 && x < 660 && y >= 60 && y < 300) return [231, 111, 81, 153];
        return [0, 0, 0, 0];
      }),
    ],
    ["transparent logo (examples/assets/logo.png)", asset("logo.png")],
  ];
}

async function transform(input, size, output) {
  const { width, height } = size;
  const started = performance.now();
  const encoded = await codec.transform({
    input,
    steps: [{ type: "resize", width, height, fit: "fill", position: "center", background: BLACK }],
    output: { flattenBackground: BLACK, ...output },
    limits,
  });
  return { data: encoded.data, ms: performance.now() - started };
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
const defaults = { jpeg: 80, webp: 82, avif: 64 };
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
      // What `.auto` answers to `Accept: image/avif,image/webp` (no source is animated here).
      [`auto, AVIF-capable Accept (avif q${defaults.avif})`, { format: "avif", quality: defaults.avif }],
    ];

const rows = new Map(modes.map(([name]) => [name, { bytes: [], ratio: [], ssim: [], ms: [] }]));
const images = await corpus();
let cases = 0;
for (const [name, input] of images) {
  const { width: sourceWidth, height: sourceHeight } = await sharp(input).metadata();
  for (const width of new Set(WIDTHS.map((wanted) => Math.min(wanted, sourceWidth)))) {
    const size = { width, height: Math.max(1, Math.round((sourceHeight * width) / sourceWidth)) };
    cases += 1;
    const reference = await pixels((await transform(input, size, { format: "png", quality: 100 })).data);
    let jpegBytes;
    for (const [mode, output] of modes) {
      if (!codec.capabilities.outputFormats.includes(output.format)) continue;
      const { data, ms } = await transform(input, size, output);
      const score = ssim(reference, await pixels(data)).mssim;
      jpegBytes ??= data.byteLength;
      const row = rows.get(mode);
      row.bytes.push(data.byteLength);
      row.ratio.push(data.byteLength / jpegBytes);
      row.ssim.push(score);
      row.ms.push(ms);
    }
    process.stderr.write(`${name} @ ${width}\n`);
  }
}

console.log(
  `codec ${codecName}: ${images.length} images, ${cases} image-width cases (widths ${WIDTHS.join(", ")})`,
);
console.log(
  "| mode | median bytes | median bytes / JPEG q80 | median SSIM | lowest SSIM | median encode ms |",
);
console.log("|---|---:|---:|---:|---:|---:|");
for (const [mode, row] of rows) {
  if (row.bytes.length === 0) {
    console.log(`| ${mode} | not written by this codec | | | | |`);
    continue;
  }
  console.log(
    `| ${mode} | ${Math.round(median(row.bytes))} | ${median(row.ratio).toFixed(2)}x | ${median(row.ssim).toFixed(4)} | ${Math.min(...row.ssim).toFixed(4)} | ${median(row.ms).toFixed(1)} |`,
  );
}
await codec.close?.();
process.exit(0);
