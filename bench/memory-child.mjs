// One codec job of bench/memory.mjs in a process of its own, started through
// packages/server/bin/with-allocator (the prebuilt server's default allocator): reads the source
// file, runs the sharp codec's transform with the job's steps, output and the default limits, and
// prints one JSON line: the process's RSS before the job, its peak (VmHWM), the CPU time of the job
// (user + system, every thread) and the wall time.
// Run by bench/memory.mjs; alone: node bench/memory-child.mjs '<job JSON>'.
import { readFileSync } from "node:fs";
import { createSharpCodec } from "@pixport/codec-sharp";
import { DEFAULT_LIMITS } from "@pixport/core";
import { statusBytes } from "./lib.mjs";

const job = JSON.parse(process.argv[2]);
const input = readFileSync(job.source);
// As the prebuilt server builds it (the decoded-source cache plays no part: no source key).
const codec = createSharpCodec({ concurrency: job.concurrency });
// Loads libvips and its encoders before the baseline, so the baseline is what a running server holds.
await codec.probe(input);
const before = statusBytes("self", "VmRSS");
const cpu = process.cpuUsage();
const started = performance.now();
let outcome;
try {
  const encoded = await codec.transform({
    input,
    steps: job.steps,
    output: {
      format: job.format,
      quality: job.quality ?? 80,
      flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 },
      ...(job.autoQuality === undefined ? {} : { autoQuality: job.autoQuality }),
    },
    limits: {
      maxInputPixels: DEFAULT_LIMITS.maxInputPixels,
      timeoutMs: job.timeoutMs ?? DEFAULT_LIMITS.maxJobMs,
    },
  });
  outcome = { width: encoded.width, height: encoded.height, bytes: encoded.data.byteLength };
} catch (error) {
  outcome = { error: String(error?.message ?? error) };
}
const used = process.cpuUsage(cpu);
console.log(
  JSON.stringify({
    ...outcome,
    baselineRss: before,
    peakRss: statusBytes("self", "VmHWM"),
    cpuMs: Math.round((used.user + used.system) / 1000),
    wallMs: Math.round(performance.now() - started),
  }),
);
