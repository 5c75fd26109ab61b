// Compares POST /v1/images/{id}/resize on the prebuilt pixport server against a raw sharp server on
// node:http doing the same resize (1920x1280 JPEG to 800 px wide), in one run, at the same
// concurrency. Each server runs in its own child process so their RSS is measured separately.
// Usage: node bench/resize-throughput.mjs [--seconds 15] [--concurrency 4] [--warmup 3] [--observability | --pages]
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fixture, startChild, uploadTo } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "15" },
    concurrency: { type: "string", default: "4" },
    warmup: { type: "string", default: "3" },
    rounds: { type: "string", default: "2" },
    // Adds a second pixport server with access logs and /metrics on, the first one having both
    // off, alternating all three: the overhead of observability in the same run.
    observability: { type: "boolean", default: false },
    // Adds a second pixport server with the web pages (playground, /docs) off, the first one having
    // them on (the default): what the pages cost API requests, in the same run.
    pages: { type: "boolean", default: false },
    // Adds a second pixport server whose environment also has these variables (JSON), alternating
    // with the first: an A/B of process settings in one run, e.g. '{"MALLOC_ARENA_MAX":"2"}'.
    "variant-env": { type: "string" },
    // Adds a second pixport server from another checkout (built, e.g. an earlier commit's clone),
    // alternating with this one: before and after a change, in the same run.
    before: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);
const here = path.dirname(fileURLToPath(import.meta.url));

function peakRss(child) {
  return new Promise((resolve) => {
    child.once("message", (message) => resolve(message.peakRss));
    child.send("peak-rss");
  });
}

/** User + system CPU time of a child process so far, ms (Linux /proc). */
function cpuMs(child) {
  try {
    const fields = readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1].split(" ");
    if (process.env.BENCH_CPU === "user") return (Number(fields[11]) * 1000) / 100;
    if (process.env.BENCH_CPU === "system") return (Number(fields[12]) * 1000) / 100;
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return Number.NaN;
  }
}

async function load(send, durationSeconds, child) {
  const cpuBefore = cpuMs(child);
  const latencies = [];
  const deadline = performance.now() + durationSeconds * 1000;
  let failures = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const start = performance.now();
        const ok = await send();
        if (!ok) failures++;
        latencies.push(performance.now() - start);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const p = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    requests: latencies.length,
    failures,
    rps: latencies.length / durationSeconds,
    p50: p(0.5),
    p99: p(0.99),
    cpuPerRequest: (cpuMs(child) - cpuBefore) / latencies.length,
  };
}

const jpeg = await fixture();
const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bench-"));
const variantEnv = values["variant-env"] === undefined ? undefined : JSON.parse(values["variant-env"]);
const before = values.before === undefined ? undefined : path.resolve(values.before);
const observeDir =
  values.observability || values.pages || variantEnv !== undefined || before !== undefined
    ? await mkdtemp(path.join(tmpdir(), "pixport-bench-"))
    : undefined;
const observed =
  observeDir === undefined
    ? undefined
    : await startChild(
        before === undefined
          ? path.join(here, "pixport-child.mjs")
          : path.join(before, "bench/pixport-child.mjs"),
        [observeDir],
        before !== undefined
          ? process.env.BENCH_PIXPORT_ENV
            ? JSON.parse(process.env.BENCH_PIXPORT_ENV)
            : {}
          : variantEnv !== undefined
            ? {
                ...(process.env.BENCH_PIXPORT_ENV ? JSON.parse(process.env.BENCH_PIXPORT_ENV) : {}),
                ...variantEnv,
              }
            : values.observability
              ? { PIXPORT_BENCH_OBSERVE: "on" }
              : { PIXPORT_BENCH_PAGES: "off" },
        [],
        {
          stderr: "ignore",
        },
      );
const pixport = await startChild(
  path.resolve(here, process.env.BENCH_PIXPORT_SCRIPT ?? "pixport-child.mjs"),
  [dataDir],
  {
    ...(values.observability ? { PIXPORT_BENCH_OBSERVE: "off" } : {}),
    ...(process.env.BENCH_PIXPORT_ENV ? JSON.parse(process.env.BENCH_PIXPORT_ENV) : {}),
  },
  // e.g. BENCH_PIXPORT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the pixport side.
  process.env.BENCH_PIXPORT_NODE_ARGS?.split(" ").filter(Boolean) ?? [],
);
// BENCH_RAW_ENV (JSON) adds variables to the raw sharp reference's environment, e.g. an LD_PRELOAD
// to see the reference on the same allocator as pixport's launcher picks.
const raw = await startChild(
  path.join(here, "raw-sharp-server.mjs"),
  [],
  process.env.BENCH_RAW_ENV ? JSON.parse(process.env.BENCH_RAW_ENV) : {},
);
try {
  /** Uploads the fixture to a pixport child and returns the sender of its resize requests. */
  const resizer = async (server) => {
    const { key, id } = await uploadTo(server, jpeg);
    return async () => {
      const response = await fetch(`${server.url}/v1/images/${id}/resize`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: '{"width":800}',
      });
      await response.arrayBuffer();
      return response.status === 201;
    };
  };
  const sendPixport = await resizer(pixport);
  const sendObserved = observed === undefined ? undefined : await resizer(observed);
  const sendRaw = async () => {
    const response = await fetch(`${raw.url}/resize?width=800`, { method: "POST", body: jpeg });
    await response.arrayBuffer();
    return response.status === 200;
  };

  await load(sendPixport, warmup, pixport.child);
  await load(sendRaw, warmup, raw.child);
  if (sendObserved !== undefined) await load(sendObserved, warmup, observed.child);
  const results = { pixport: [], raw: [], observed: [] };
  // pixport computes the facts of new images (metadata) once it runs no image job: that deferred
  // work must not land in another server's measurement, so every measurement starts once all
  // servers are idle, and the CPU pixport spends settling is reported per request it served.
  const children = [raw.child, pixport.child, ...(observed === undefined ? [] : [observed.child])];
  const deferred = new Map();
  const settle = async (after) => {
    const before = after === undefined ? 0 : cpuMs(after.child);
    for (let waited = 0; waited < 60_000; waited += 300) {
      const start = children.map(cpuMs);
      await new Promise((resolve) => setTimeout(resolve, 300));
      if (children.every((child, index) => cpuMs(child) - start[index] < 15)) break;
    }
    if (after !== undefined) {
      const entry = deferred.get(after.name) ?? { cpuMs: 0, requests: 0 };
      entry.cpuMs += cpuMs(after.child) - before;
      entry.requests += after.requests;
      deferred.set(after.name, entry);
    }
  };
  const measure = async (name, send, child) => {
    await settle();
    const result = await load(send, seconds / rounds, child);
    await settle({ name, child, requests: result.requests });
    return result;
  };
  // Alternate the servers so drift in machine load affects them alike.
  for (let round = 0; round < rounds; round++) {
    results.raw.push(await measure("raw", sendRaw, raw.child));
    results.pixport.push(await measure("pixport", sendPixport, pixport.child));
    if (sendObserved !== undefined)
      results.observed.push(await measure("observed", sendObserved, observed.child));
  }
  const merge = (list) => ({
    requests: list.reduce((sum, item) => sum + item.requests, 0),
    failures: list.reduce((sum, item) => sum + item.failures, 0),
    rps: list.reduce((sum, item) => sum + item.rps, 0) / list.length,
    p99: Math.max(...list.map((item) => item.p99)),
    p50: list.reduce((sum, item) => sum + item.p50, 0) / list.length,
    cpuPerRequest: list.reduce((sum, item) => sum + item.cpuPerRequest, 0) / list.length,
  });
  const ours = merge(results.pixport);
  const reference = merge(results.raw);
  const oursRss = await peakRss(pixport.child);
  const referenceRss = await peakRss(raw.child);
  const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
  console.log(
    `resize 1920x1280 JPEG -> 800 px wide, concurrency ${concurrency}, ${seconds} s each (${rounds} alternating rounds)`,
  );
  const malloc = (server) => /MALLOC (\S+)/.exec(server.output())?.[1] ?? "unknown";
  console.log(
    `pixport's malloc: ${malloc(pixport)}; raw sharp's: ${process.env.BENCH_RAW_ENV ? process.env.BENCH_RAW_ENV : "system"}`,
  );
  console.log(`                 req/s    p50 ms   p99 ms   peak RSS   failures   server CPU ms/req`);
  for (const [label, result, rss] of [
    ["raw sharp", reference, referenceRss],
    ["pixport", ours, oursRss],
  ]) {
    console.log(
      `${label.padEnd(14)} ${result.rps.toFixed(1).padStart(7)} ${result.p50.toFixed(1).padStart(9)} ${result.p99.toFixed(1).padStart(8)} ${mb(rss).padStart(10)} ${String(result.failures).padStart(10)} ${result.cpuPerRequest.toFixed(1).padStart(19)}`,
    );
  }
  console.log(`throughput ratio pixport/raw: ${(ours.rps / reference.rps).toFixed(3)} (target >= 0.95)`);
  console.log(
    `p99 ratio pixport/raw: ${(ours.p99 / reference.p99).toFixed(3)}; RSS ratio: ${(oursRss / referenceRss).toFixed(2)}`,
  );
  for (const [name, entry] of deferred) {
    if (name === "raw") continue;
    console.log(
      `${name}: deferred work after its measurements (image facts): ${(entry.cpuMs / Math.max(1, entry.requests)).toFixed(1)} CPU ms per request served`,
    );
  }
  if (observed !== undefined && values.pages) {
    const withoutPages = merge(results.observed);
    console.log(
      `pixport with the pages off: ${withoutPages.rps.toFixed(1)} req/s, p99 ${withoutPages.p99.toFixed(1)} ms, ${withoutPages.cpuPerRequest.toFixed(1)} CPU ms/req; ratio pages on / pages off: ${(ours.rps / withoutPages.rps).toFixed(3)}, CPU per request on / off: ${(ours.cpuPerRequest / withoutPages.cpuPerRequest).toFixed(3)}`,
    );
  } else if (before !== undefined) {
    const earlier = merge(results.observed);
    const earlierRss = await peakRss(observed.child);
    console.log(
      `pixport before (${before}): ${earlier.rps.toFixed(1)} req/s, p99 ${earlier.p99.toFixed(1)} ms, ${earlier.cpuPerRequest.toFixed(1)} CPU ms/req, peak RSS ${mb(earlierRss)}, ${earlier.failures} failures; throughput ratio to raw sharp ${(earlier.rps / reference.rps).toFixed(3)}`,
    );
    console.log(
      `after / before: throughput ${(ours.rps / earlier.rps).toFixed(3)}, p99 ${(ours.p99 / earlier.p99).toFixed(3)}, CPU per request ${(ours.cpuPerRequest / earlier.cpuPerRequest).toFixed(3)}, peak RSS ${(oursRss / earlierRss).toFixed(3)}`,
    );
  } else if (variantEnv !== undefined) {
    const variant = merge(results.observed);
    const variantRss = await peakRss(observed.child);
    console.log(
      `pixport with ${JSON.stringify(variantEnv)} (malloc ${malloc(observed)}): ${variant.rps.toFixed(1)} req/s, p99 ${variant.p99.toFixed(1)} ms, ${variant.cpuPerRequest.toFixed(1)} CPU ms/req, peak RSS ${mb(variantRss)}; throughput ratio to raw sharp ${(variant.rps / reference.rps).toFixed(3)}, to the first pixport ${(variant.rps / ours.rps).toFixed(3)}; RSS ratio ${(variantRss / referenceRss).toFixed(2)}`,
    );
  } else if (observed !== undefined) {
    const withObservability = merge(results.observed);
    console.log(
      `pixport with access logs and /metrics: ${withObservability.rps.toFixed(1)} req/s, p99 ${withObservability.p99.toFixed(1)} ms, ${withObservability.cpuPerRequest.toFixed(1)} CPU ms/req; ratio to the same server without them: ${(withObservability.rps / ours.rps).toFixed(3)} (target >= 0.97); to raw sharp: ${(withObservability.rps / reference.rps).toFixed(3)}`,
    );
  }
} finally {
  pixport.child.kill("SIGTERM");
  raw.child.kill("SIGTERM");
  observed?.child.kill("SIGTERM");
  await rm(dataDir, { recursive: true, force: true });
  if (observeDir !== undefined) await rm(observeDir, { recursive: true, force: true });
}
