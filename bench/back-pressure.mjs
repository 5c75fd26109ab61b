// Back-pressure of the prebuilt server (a robustness goal of the project): at 5x the sustainable load,
// excess requests must get 503 OVERLOADED fast (p99 < 100 ms) while accepted requests keep their
// p99 within 2x of the unloaded p99. The reference in the same run is the same server with an
// unbounded job queue under the same overload.
//
// Each server runs in a child process; the load is POST /v1/images/{id}/resize of a 1920x1280 JPEG
// to 800 px. "Sustainable" is a concurrency of maxActive (every request gets a slot at once).
// Clients honour Retry-After on 503 as the SDK's HTTP client does (sleep, then try again); with
// --ignore-retry-after they hammer instead, and the 503s themselves eat the CPU.
// Usage: node bench/back-pressure.mjs [--seconds 10] [--max-active 4] [--max-queued 4] [--factor 5]
//        [--ignore-retry-after]
// Run `pnpm build` first (the server is imported from its dist).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fixture, startChild } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    "max-active": { type: "string", default: "4" },
    "max-queued": { type: "string", default: "4" },
    "max-wait-ms": { type: "string", default: "10000" },
    factor: { type: "string", default: "5" },
    "ignore-retry-after": { type: "boolean", default: false },
  },
});
const seconds = Number(values.seconds);
const maxActive = Number(values["max-active"]);
const overload = maxActive * Number(values.factor);
const here = path.dirname(fileURLToPath(import.meta.url));

async function startServer(workQueue) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bench-"));
  const server = await startChild(path.join(here, "pixport-child.mjs"), [dataDir], {
    PIXPORT_BENCH_WORK_QUEUE: JSON.stringify(workQueue),
  });
  const key = /KEY (\S+)/.exec(server.output())[1];
  const form = new FormData();
  form.append("name", "bench");
  form.append("image", new Blob([jpeg]), "bench.jpg");
  const uploaded = await fetch(`${server.url}/v1/images/upload`, {
    method: "POST",
    headers: { "x-api-key": key },
    body: form,
  });
  const { id } = await uploaded.json();
  const resize = async () => {
    const response = await fetch(`${server.url}/v1/images/${id}/resize`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: '{"width":800}',
    });
    await response.arrayBuffer();
    return { status: response.status, retryAfter: Number(response.headers.get("retry-after") ?? 0) };
  };
  return {
    resize,
    async stop() {
      server.child.kill("SIGTERM");
      await new Promise((resolve) => server.child.once("exit", resolve));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** `concurrency` closed-loop clients for `duration` s; latencies by status. */
async function load(send, concurrency, duration) {
  const byStatus = new Map();
  const deadline = performance.now() + duration * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const start = performance.now();
        const { status, retryAfter } = await send();
        const list = byStatus.get(status) ?? [];
        list.push(performance.now() - start);
        byStatus.set(status, list);
        if (status === 503 && retryAfter > 0 && !values["ignore-retry-after"]) {
          await new Promise((resolve) =>
            setTimeout(resolve, Math.min(retryAfter * 1000, deadline - performance.now())),
          );
        }
      }
    }),
  );
  return byStatus;
}

function p99(list = []) {
  if (list.length === 0) return Number.NaN;
  const sorted = [...list].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))];
}

const jpeg = await fixture();
const bounded = await startServer({
  maxActive,
  maxQueued: Number(values["max-queued"]),
  maxWaitMs: Number(values["max-wait-ms"]),
});
const unbounded = await startServer({ maxActive: 10_000, maxQueued: 100_000, maxWaitMs: 600_000 });
try {
  await load(bounded.resize, maxActive, 2);
  await load(unbounded.resize, maxActive, 2);
  const calm = await load(bounded.resize, maxActive, seconds);
  const busy = await load(bounded.resize, overload, seconds);
  const reference = await load(unbounded.resize, overload, seconds);
  const calmP99 = p99(calm.get(201));
  const accepted = busy.get(201) ?? [];
  const refused = busy.get(503) ?? [];
  const others = [...busy.keys()].filter((status) => status !== 201 && status !== 503);
  console.log(
    `resize 1920x1280 JPEG -> 800 px; maxActive ${maxActive}, maxQueued ${values["max-queued"]}; ${seconds} s per phase; clients ${values["ignore-retry-after"] ? "ignore" : "honour"} Retry-After`,
  );
  console.log(
    `unloaded (${maxActive} clients): ${calm.get(201)?.length ?? 0} x 201, p99 ${calmP99.toFixed(0)} ms`,
  );
  console.log(
    `overloaded (${overload} clients), bounded: ${accepted.length} x 201 p99 ${p99(accepted).toFixed(0)} ms, ${refused.length} x 503 p99 ${p99(refused).toFixed(1)} ms${others.length > 0 ? `, other statuses ${others.join(",")}` : ""}`,
  );
  console.log(
    `overloaded (${overload} clients), unbounded reference: ${reference.get(201)?.length ?? 0} x 201 p99 ${p99(reference.get(201)).toFixed(0)} ms`,
  );
  console.log(
    `accepted p99 / unloaded p99, bounded:   ${(p99(accepted) / calmP99).toFixed(2)} (target <= 2)`,
  );
  console.log(`accepted p99 / unloaded p99, unbounded: ${(p99(reference.get(201)) / calmP99).toFixed(2)}`);
  console.log(`503 p99: ${p99(refused).toFixed(1)} ms (target < 100 ms)`);
} finally {
  await bounded.stop();
  await unbounded.stop();
}
