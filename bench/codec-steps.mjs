// Times every transform step on both codecs (sharp and jimp) on photo-like JPEGs of 640x480,
// 1920x1280 and 4000x3000, in one run. Prints, per size and step: ops/s on each codec, the
// jimp/sharp time ratio, and the jimp transform's time relative to jimp's own decode + encode round
// trip of the same image to the same format, measured alternately with it (the "x round trip" column;
// target: at most 2).
// Every measurement is a whole codec.transform() call (decode, the step, encode), as the API runs it.
// Usage: node bench/codec-steps.mjs [--sizes 640x480,1920x1280,4000x3000] [--seconds 2] [--min-runs 2]
// Run `pnpm build` first (the codecs are imported from their dist).
import { parseArgs } from "node:util";
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import sharp from "sharp";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "640x480,1920x1280,4000x3000" },
    seconds: { type: "string", default: "2" },
    "min-runs": { type: "string", default: "2" },
    steps: { type: "string" },
  },
});
const sizes = values.sizes.split(",").map((size) => size.split("x").map(Number));
const budgetMs = Number(values.seconds) * 1000;
const minRuns = Number(values["min-runs"]);

const BLACK = { r: 0, g: 0, b: 0, alpha: 1 };
const WHITE = { r: 255, g: 255, b: 255, alpha: 1 };

/** A photo-like JPEG (gradients, a disc, noise), generated so nothing is downloaded. */
async function photo(width, height) {
  const raw = Buffer.alloc(width * height * 3);
  let seed = 7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 24;
      const disc = (x - width * 0.4) ** 2 + (y - height * 0.5) ** 2 < (height * 0.3) ** 2;
      const offset = (y * width + x) * 3;
      raw[offset] = disc ? 210 + (noise >> 1) : ((x * 230) / width + noise) & 255;
      raw[offset + 1] = ((y * 200) / height + noise) & 255;
      raw[offset + 2] = disc ? 60 : (((x + y) * 160) / (width + height) + noise) & 255;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function watermark() {
  return sharp({
    create: { width: 64, height: 64, channels: 4, background: { r: 255, g: 255, b: 255, alpha: 0.5 } },
  })
    .png()
    .toBuffer();
}

function stepsFor(width, height, mark) {
  return [
    ["round trip (no step)", []],
    ["mirror", [{ type: "mirror", mode: "horizontal" }]],
    [
      "resize fill 1/2",
      [
        {
          type: "resize",
          width: Math.round(width / 2),
          height: Math.round(height / 2),
          fit: "fill",
          position: "center",
          background: BLACK,
        },
      ],
    ],
    [
      "resize contain",
      [
        {
          type: "resize",
          width: Math.round(width * 0.6),
          height: Math.round(width * 0.6),
          fit: "contain",
          position: "center",
          background: WHITE,
        },
      ],
    ],
    [
      "resize cover",
      [
        {
          type: "resize",
          width: Math.round(height * 0.5),
          height: Math.round(height * 0.5),
          fit: "cover",
          position: "center",
          background: BLACK,
        },
      ],
    ],
    [
      "crop 1/2",
      [
        {
          type: "crop",
          left: Math.round(width / 4),
          top: Math.round(height / 4),
          width: Math.round(width / 2),
          height: Math.round(height / 2),
        },
      ],
    ],
    ["rotate 90", [{ type: "rotate", angle: 90, background: BLACK }]],
    ["rotate 30", [{ type: "rotate", angle: 30, background: BLACK }]],
    [
      "modulate (all fields)",
      [
        {
          type: "modulate",
          brightness: 10,
          saturation: 20,
          exposure: 5,
          contrast: 15,
          lightness: 5,
          hue: 30,
        },
      ],
    ],
    [
      "modulate (brightness)",
      [{ type: "modulate", brightness: 20, saturation: 0, exposure: 0, contrast: 0, lightness: 0, hue: 0 }],
    ],
    ["blur sigma 2", [{ type: "blur", sigma: 2 }]],
    ["blur sigma 20 (default)", [{ type: "blur", sigma: 20 }]],
    [
      "watermark (tiled)",
      [
        {
          type: "overlay",
          layers: [{ input: mark, left: 10, top: 10, width: 64, height: 64, repeat: "repeat", opacity: 1 }],
        },
      ],
    ],
  ];
}

/** Median ms of `codec.transform(request)`, run for at least `minRuns` and about `budgetMs`. */
async function time(codec, request) {
  const [median] = await timePair(codec, request, null);
  return median;
}

/**
 * Medians (ms) of `request` and of `reference`, run alternately so that load from other processes
 * on the machine hits both alike (the ratio between them is what the target is about).
 */
async function timePair(codec, request, reference) {
  const durations = [];
  const references = [];
  const started = performance.now();
  while (durations.length < minRuns || performance.now() - started < budgetMs) {
    if (reference !== null) {
      const before = performance.now();
      await codec.transform(reference);
      references.push(performance.now() - before);
    }
    const before = performance.now();
    await codec.transform(request);
    durations.push(performance.now() - before);
    if (durations.length >= 50) break;
  }
  const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return [median(durations), references.length > 0 ? median(references) : undefined];
}

const codecs = { sharp: createSharpCodec(), jimp: createJimpCodec() };
const mark = await watermark();
const rows = [];
console.log(
  `node ${process.version}, ${sizes.map(([w, h]) => `${w}x${h}`).join(", ")}; median ms per transform\n`,
);
for (const [width, height] of sizes) {
  const input = await photo(width, height);
  const output = { format: "jpeg", quality: 90, flattenBackground: BLACK };
  const limits = { maxInputPixels: 50_000_000 };
  for (const [name, steps] of stepsFor(width, height, mark)) {
    if (
      values.steps &&
      name !== "round trip (no step)" &&
      !values.steps.split(",").some((s) => name.startsWith(s))
    )
      continue;
    const request = { input, steps, output, limits };
    const sharpMs = await time(codecs.sharp, request);
    // jimp's round trip of the same image and format is re-measured next to every step.
    const [jimpMs, roundTrip] = await timePair(
      codecs.jimp,
      request,
      steps.length === 0 ? null : { ...request, steps: [] },
    );
    const row = {
      size: `${width}x${height}`,
      step: name,
      sharpOps: 1000 / sharpMs,
      jimpOps: 1000 / jimpMs,
      ratio: jimpMs / sharpMs,
      vsRoundTrip: roundTrip === undefined ? 1 : jimpMs / roundTrip,
    };
    rows.push(row);
    console.log(
      `${row.size.padEnd(10)} ${name.padEnd(24)} sharp ${row.sharpOps.toFixed(2).padStart(7)} ops/s  jimp ${row.jimpOps.toFixed(2).padStart(6)} ops/s  jimp/sharp ${row.ratio.toFixed(1).padStart(5)}x  jimp vs round trip ${row.vsRoundTrip.toFixed(2)}x`,
    );
  }
  console.log("");
}

console.log("| size | step | sharp ops/s | jimp ops/s | jimp/sharp | jimp / jimp round trip |");
console.log("|---|---|---|---|---|---|");
for (const row of rows) {
  console.log(
    `| ${row.size} | ${row.step} | ${row.sharpOps.toFixed(2)} | ${row.jimpOps.toFixed(2)} | ${row.ratio.toFixed(1)}x | ${row.vsRoundTrip.toFixed(2)} |`,
  );
}
const worst = rows
  .filter((row) => row.step !== "round trip (no step)")
  .sort((a, b) => b.vsRoundTrip - a.vsRoundTrip)[0];
if (worst) {
  console.log(
    `\nWorst jimp step vs its round trip: ${worst.step} at ${worst.size}, ${worst.vsRoundTrip.toFixed(2)}x (target <= 2).`,
  );
}
