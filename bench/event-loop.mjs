// Event-loop delay while image jobs run (a robustness goal of the project: p99 under 50 ms while 8
// jimp and 8 sharp jobs run at once on one node). Runs the jobs in this process, as the server
// does, and samples the loop with a 5 ms interval: the delay of a tick is its gap minus 5 ms (a
// stall that lasts to the end counts too). perf_hooks.monitorEventLoopDelay is not used: a loop
// blocked for seconds yields almost no samples there, so its p99 hides the stall. The reference
// is jimp on the calling thread (workers: 0), as the codec ran before it had worker threads.
// Usage: node bench/event-loop.mjs [--seconds 10] [--jobs 8]
// Run `pnpm build` first (the codecs are imported from their dist).
import { parseArgs } from "node:util";
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import { fixture } from "./lib.mjs";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, jobs: { type: "string", default: "8" } },
});
const seconds = Number(values.seconds);
const jobs = Number(values.jobs);
const input = new Uint8Array(await fixture());
const request = {
  input,
  steps: [
    {
      type: "resize",
      width: 800,
      height: 533,
      fit: "fill",
      position: "center",
      background: { r: 0, g: 0, b: 0, alpha: 1 },
    },
  ],
  output: { format: "jpeg", quality: 80, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
  limits: { maxInputPixels: 50_000_000 },
};

async function measure(jimp) {
  const sharp = createSharpCodec();
  const done = { jimp: 0, sharp: 0 };
  const delays = [];
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    delays.push(Math.max(0, now - last - 5));
    last = now;
  }, 5);
  const deadline = performance.now() + seconds * 1000;
  const loop = async (codec, name) => {
    while (performance.now() < deadline) {
      await codec.transform(request);
      done[name] += 1;
    }
  };
  await Promise.all([
    ...Array.from({ length: jobs }, () => loop(jimp, "jimp")),
    ...Array.from({ length: jobs }, () => loop(sharp, "sharp")),
  ]);
  clearInterval(ticker);
  delays.push(Math.max(0, performance.now() - last - 5));
  await jimp.close();
  delays.sort((a, b) => a - b);
  const p99 = delays[Math.min(delays.length - 1, Math.floor(delays.length * 0.99))];
  const stalled = delays.reduce((sum, delay) => sum + delay, 0);
  return { ...done, p99, longest: delays.at(-1), stalled: stalled / (seconds * 1000) };
}

console.log(`${jobs} jimp + ${jobs} sharp jobs (1920x1280 JPEG -> 800 px), ${seconds} s each`);
for (const [label, codec] of [
  ["jimp in worker threads (default)", createJimpCodec()],
  ["jimp on the calling thread (workers: 0)", createJimpCodec({ workers: 0 })],
]) {
  const result = await measure(codec);
  console.log(
    `${label.padEnd(42)} loop delay p99 ${result.p99.toFixed(1).padStart(7)} ms, longest ${result.longest.toFixed(0).padStart(5)} ms, stalled ${(result.stalled * 100).toFixed(0).padStart(3)} % of the run; jobs done: jimp ${result.jimp}, sharp ${result.sharp}`,
  );
}
console.log("target: p99 < 50 ms");
