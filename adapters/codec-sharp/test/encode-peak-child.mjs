// Runs one transform of the built sharp codec in a process of its own and prints its RSS before the
// job and its peak (VmHWM), bytes, as one JSON line. Started by encoder-memory.test.ts through the
// prebuilt server's launcher (packages/server/bin/with-allocator), the default allocator.
import { readFileSync } from "node:fs";
import { createSharpCodec } from "../dist/index.js";

const status = (field) =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync("/proc/self/status", "utf8"))?.[1]) *
  1024;
const job = JSON.parse(process.argv[2]);
const input = readFileSync(job.source);
const codec = createSharpCodec();
// libvips and its loaders are in memory before the baseline, as in a running server.
await codec.probe(input);
const baseline = status("VmRSS");
const encoded = await codec.transform({
  input,
  steps: job.steps,
  output: { format: job.format, quality: 80, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
  limits: { maxInputPixels: 50_000_000, timeoutMs: 600_000 },
});
process.stdout.write(
  `${JSON.stringify({ baseline, peak: status("VmHWM"), width: encoded.width, height: encoded.height })}\n`,
);
