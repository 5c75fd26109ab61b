// The prebuilt pixport server (built packages) on a random port over a temporary data directory,
// with one upgraded live key ("KEY") and, for bench/fair-uploads.mjs, PIXPORT_BENCH_TRIAL_ACCOUNTS
// trial accounts with one live key each ("TRIAL_KEYS").
import { activeAllocator, createApiKey, resolveServerConfig, startPixportServer } from "@pixport/server";
import { reportPeakRss } from "./lib.mjs";

reportPeakRss();

// The limiter still runs on every request (its cost is measured), with a limit the load never
// reaches; the account is upgraded so the trial quota does not stop the run.
const running = await startPixportServer(
  resolveServerConfig({
    port: 0,
    host: "127.0.0.1",
    dataDir: process.argv[2],
    log: false,
    policies: { liveRequestsPerMinute: 1_000_000_000 },
    // bench/back-pressure.mjs sets the node's job gate; the other benchmarks keep the default.
    ...(process.env.PIXPORT_BENCH_WORK_QUEUE
      ? { workQueue: JSON.parse(process.env.PIXPORT_BENCH_WORK_QUEUE) }
      : {}),
    // resize-throughput.mjs --observability: access logs (to a discarded stderr) and /metrics on,
    // or both off; unset keeps the bench's usual setting (logs off, metrics at their default: on).
    ...(process.env.PIXPORT_BENCH_OBSERVE === "on" ? { log: true, metrics: { enabled: true } } : {}),
    ...(process.env.PIXPORT_BENCH_OBSERVE === "off" ? { log: false, metrics: { enabled: false } } : {}),
    // resize-throughput.mjs --pages: the comparison server without the playground and /docs.
    ...(process.env.PIXPORT_BENCH_PAGES === "off" ? { pages: { playground: false, docs: false } } : {}),
    // bench/delivery.mjs: the delivery signing key and cache size.
    ...(process.env.PIXPORT_BENCH_DELIVERY
      ? { delivery: JSON.parse(process.env.PIXPORT_BENCH_DELIVERY) }
      : {}),
    // bench/delivery.mjs: a server with the codec's decoded-source cache off (0) beside the default.
    ...(process.env.PIXPORT_BENCH_SOURCE_CACHE_BYTES
      ? { sourceCacheBytes: Number(process.env.PIXPORT_BENCH_SOURCE_CACHE_BYTES) }
      : {}),
    // bench/ocr.mjs --http-env: the blob cache's size (stored originals kept in memory).
    ...(process.env.PIXPORT_BENCH_BLOB_CACHE_BYTES
      ? { blobCacheBytes: Number(process.env.PIXPORT_BENCH_BLOB_CACHE_BYTES) }
      : {}),
    // bench/ocr.mjs: the embedded OCR's engine (wasm or native).
    ...(process.env.PIXPORT_BENCH_OCR_ENGINE ? { ocrEngine: process.env.PIXPORT_BENCH_OCR_ENGINE } : {}),
    // bench/background.mjs picks the background remover (e.g. the ONNX engine and its model).
    ...(process.env.PIXPORT_BENCH_BACKGROUND
      ? { backgroundRemoval: JSON.parse(process.env.PIXPORT_BENCH_BACKGROUND) }
      : {}),
  }),
);
await running.accounts.setUpgraded("bench", true);
const { key } = await createApiKey(running.keys, { kind: "live", accountId: "bench" });
const trial = [];
for (let index = 0; index < Number(process.env.PIXPORT_BENCH_TRIAL_ACCOUNTS ?? 0); index++) {
  trial.push((await createApiKey(running.keys, { kind: "live", accountId: `trial-${index}` })).key);
}
console.log(`KEY ${key}`);
console.log(`TRIAL_KEYS ${trial.join(",")}`);
console.log(`MALLOC ${activeAllocator()}`);
console.log(`listening on ${running.url}`);
process.on("SIGTERM", () => running.close().then(() => process.exit(0)));
