// Peak memory of the worst allowed request of each output format, beside the memory budget's
// estimate of it and the budget: each job runs alone in a child process (bench/memory-child.mjs)
// started through packages/server/bin/with-allocator, the prebuilt server's default allocator.
//
// The source is a photo-like 50-megapixel JPEG (the default `limits.maxInputPixels`; 7071 x 7071,
// gradients and noise, under the 20 MiB upload limit). Per format, two requests: a 45 degree
// rotation (the 10000 x 10000 canvas, the largest the output side limit allows between steps) then
// a resize, and a resize alone; each to the largest output side that both the format's
// `limits.maxOutputPixels` and the default 1 GiB budget allow (what the budget would refuse with
// a 422 is not an allowed request). The peak is the process's VmHWM less its RSS before the job
// (libvips loaded); CPU is user + system of every thread, which a loaded machine leaves as it is
// (the jobs run without the deadline, so that a busy machine does not stop them).
//
// Run: node bench/memory.mjs [--auto-quality] [format ...]   (BENCH_PARALLEL=n runs n children at
// once; default 1). `--auto-quality` encodes with `q_auto` (the codec's quality search at the `good`
// target) where the format has one: the search holds the output's pixels, a probe and a decoded
// candidate beside the encoder.
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { DEFAULT_LIMITS, IMAGE_FORMATS } from "@pixport/core";
import { AUTO_QUALITY_TARGETS, estimateJobBytes, memoryBudgetOptionsSchema } from "@pixport/core/internal";

const run = promisify(execFile);
const MB = 1024 * 1024;
const budget = memoryBudgetOptionsSchema.parse({}).maxBytes;
const side = 7071;
const source = join(tmpdir(), `pixport-bench-memory-${side}.jpg`);

if (!existsSync(source)) {
  const { default: sharp } = await import("sharp");
  const raw = Buffer.alloc(side * side * 3);
  let seed = 7;
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 32;
      const offset = (y * side + x) * 3;
      raw[offset] = ((x * 255) / side + noise) & 255;
      raw[offset + 1] = ((y * 255) / side + noise) & 255;
      raw[offset + 2] = (((x + y) * 255) / (2 * side)) & 255;
    }
  }
  writeFileSync(
    source,
    await sharp(raw, { raw: { width: side, height: side, channels: 3 } })
      .jpeg({ quality: 85 })
      .toBuffer(),
  );
}

const input = { width: side, height: side };
const black = { r: 0, g: 0, b: 0, alpha: 1 };
const rotate = { type: "rotate", angle: 45, background: black };
const resize = (s) => ({
  type: "resize",
  width: s,
  height: s,
  fit: "fill",
  position: "center",
  background: black,
});

/** The largest square output side of `stepsFor(side)` in `format` that the limits and the budget allow. */
function largestAllowed(format, stepsFor) {
  let high = Math.min(
    DEFAULT_LIMITS.maxOutputSide,
    Math.floor(Math.sqrt(DEFAULT_LIMITS.maxOutputPixels[format])),
  );
  let low = 0;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (estimateJobBytes(input, stepsFor(middle), 1, format, autoTarget(format) !== undefined) <= budget) {
      low = middle;
    } else high = middle - 1;
  }
  return low;
}

const args = process.argv.slice(2);
const autoQuality = args.includes("--auto-quality");
const named = args.filter((arg) => arg !== "--auto-quality");
const formats = named.length > 0 ? named : IMAGE_FORMATS;
/** The search's range per format (packages/core/src/operations/quality-levels.ts). */
const RANGES = { jpeg: { min: 30, max: 95 }, webp: { min: 30, max: 95 }, avif: { min: 20, max: 90 } };
/** The `good` target of `format` with its range, for `--auto-quality`; none for lossless formats. */
const autoTarget = (format) => {
  const ssim = AUTO_QUALITY_TARGETS.good[format];
  return autoQuality && ssim !== undefined ? { ssim, ...RANGES[format] } : undefined;
};
const jobs = [];
for (const format of formats) {
  for (const [name, stepsFor] of [
    ["rotate 45 + resize", (s) => [rotate, resize(s)]],
    ["resize", (s) => [resize(s)]],
  ]) {
    const s = largestAllowed(format, stepsFor);
    if (s === 0) continue;
    const steps = stepsFor(s);
    jobs.push({
      format,
      name: `${name} to ${s}²`,
      steps,
      estimate: estimateJobBytes(input, steps, 1, format, autoTarget(format) !== undefined),
    });
  }
}

const launcher = new URL("../packages/server/bin/with-allocator", import.meta.url).pathname;
const child = new URL("./memory-child.mjs", import.meta.url).pathname;
const results = [];
const parallel = Math.max(1, Number(process.env.BENCH_PARALLEL ?? 1));
const queue = [...jobs];
await Promise.all(
  Array.from({ length: parallel }, async () => {
    for (let job = queue.shift(); job !== undefined; job = queue.shift()) {
      const { stdout } = await run(
        "sh",
        [
          launcher,
          process.execPath,
          child,
          // No deadline: the job's CPU time is the figure that decides whether it fits in
          // `maxJobMs`; on a machine shared with other work the wall time would stop it early.
          JSON.stringify({
            source,
            steps: job.steps,
            format: job.format,
            autoQuality: autoTarget(job.format),
            timeoutMs: 3_600_000,
          }),
        ],
        { maxBuffer: 1 << 20 },
      );
      results.push({ ...job, ...JSON.parse(stdout.trim().split("\n").at(-1)) });
    }
  }),
);

console.log(
  `budget ${Math.round(budget / MB)} MB; source ${side} x ${side} JPEG; default limits${autoQuality ? "; q_auto" : ""}`,
);
console.log(
  "format  request                       peak-base MB  estimate MB  peak/est  CPU s  wall s  output",
);
for (const result of results.sort(
  (a, b) => a.format.localeCompare(b.format) || a.name.localeCompare(b.name),
)) {
  const growth = result.peakRss - result.baselineRss;
  console.log(
    [
      result.format.padEnd(6),
      result.name.padEnd(30),
      String(Math.round(growth / MB)).padStart(12),
      String(Math.round(result.estimate / MB)).padStart(11),
      (growth / result.estimate).toFixed(2).padStart(8),
      (result.cpuMs / 1000).toFixed(1).padStart(5),
      (result.wallMs / 1000).toFixed(1).padStart(6),
      result.error ?? `${result.width}x${result.height} ${Math.round(result.bytes / 1024)} KB`,
    ].join("  "),
  );
}
