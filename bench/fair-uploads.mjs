// Upload fairness of the prebuilt server (default limits) against accounts that hold upload slots
// with slow bodies: `--accounts` trial accounts each keep `--connections` uploads open (8, the
// per-account cap), sending the body of a declared 20 MB upload either one byte every 2 s
// (`trickle`, 16 B/s in all for 4 x 8) or at `--rate` bytes per second per connection (`rate`,
// 20 KB/s), and reconnect as soon as an upload is answered (408 cut-offs, 503s after 250 ms).
// Meanwhile another tenant uploads a 1920x1280 JPEG every `--every-ms`, one at a time, and the
// bench prints its outcomes and latency p50/p99. The reference in the same run is the same tenant
// on the same server with no attacker; the ratios compare each attack with it.
// Usage: node bench/fair-uploads.mjs [--seconds 45] [--accounts 4] [--connections 8]
//        [--rate 20000] [--every-ms 3000] [--modes trickle,rate]
// Run `pnpm build` first (the server is imported from its dist).
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fixture, startChild } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "45" },
    accounts: { type: "string", default: "4" },
    connections: { type: "string", default: "8" },
    rate: { type: "string", default: "20000" },
    "every-ms": { type: "string", default: "3000" },
    modes: { type: "string", default: "trickle,rate" },
  },
});
const seconds = Number(values.seconds);
const accounts = Number(values.accounts);
const connections = Number(values.connections);
const rate = Number(values.rate);
const everyMs = Number(values["every-ms"]);
const here = path.dirname(fileURLToPath(import.meta.url));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** User and system CPU seconds of a process so far (Linux /proc). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** One attacking connection, reopened after each answer until `stop()`; counts answers by status. */
function attacker(url, key, mode, statuses) {
  let stopped = false;
  let current;
  const boundary = "pixportFairBench";
  const open = () => {
    if (stopped) return;
    const request = httpRequest(`${url}/v1/images/upload`, {
      method: "POST",
      headers: {
        "x-api-key": key,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(20_000_000),
      },
    });
    current = request;
    const timer =
      mode === "trickle"
        ? setInterval(() => request.write("x"), 2000)
        : setInterval(() => request.write(Buffer.alloc(rate / 10, 120)), 100);
    let answered = false;
    const again = (status) => {
      if (answered || stopped) return;
      answered = true;
      clearInterval(timer);
      statuses[status] = (statuses[status] ?? 0) + 1;
      request.destroy();
      setTimeout(open, status === 503 ? 250 : 0);
    };
    request.on("response", (response) => {
      response.resume();
      again(response.statusCode ?? 0);
    });
    request.on("error", () => again("reset"));
    request.write(
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
    );
  };
  open();
  return () => {
    stopped = true;
    current?.destroy();
  };
}

/**
 * One upload over its own connection; its status, or "reset" when the connection closed without an
 * answer (node's client reads a 503 sent before the body was read, which fetch reports as a reset).
 */
function uploadOnce(url, key, jpeg) {
  const boundary = "pixportFairGood";
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\ngood\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="good.jpg"\r\n` +
        "Content-Type: image/jpeg\r\n\r\n",
    ),
    jpeg,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return new Promise((resolve) => {
    const request = httpRequest(`${url}/v1/images/upload`, {
      method: "POST",
      agent: false,
      headers: {
        "x-api-key": key,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(body.byteLength),
      },
    });
    request.on("response", (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", () => resolve(response.statusCode ?? 0));
    });
    request.on("error", () => resolve("reset"));
    request.end(body);
  });
}

/** The good tenant: one upload every `everyMs` (or right after a slower one), for `ms`. */
async function goodTenant(url, key, jpeg, ms) {
  const outcomes = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const started = performance.now();
    const status = await uploadOnce(url, key, jpeg);
    const latency = performance.now() - started;
    outcomes.push({ status, latency });
    await sleep(Math.max(0, everyMs - latency));
  }
  return outcomes;
}

async function run(mode, jpeg) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bench-"));
  const server = await startChild(path.join(here, "pixport-fair-child.mjs"), [dataDir], {
    PIXPORT_BENCH_TRIAL_ACCOUNTS: String(accounts),
  });
  try {
    const key = /KEY (\S+)/.exec(server.output())[1];
    const trialKeys = /TRIAL_KEYS (\S*)/.exec(server.output())[1].split(",").filter(Boolean);
    const statuses = {};
    const stops =
      mode === "none"
        ? []
        : trialKeys.flatMap((trialKey) =>
            Array.from({ length: connections }, () => attacker(server.url, trialKey, mode, statuses)),
          );
    // Let the attackers take their slots before the tenant starts.
    if (mode !== "none") await sleep(2000);
    const cpuBefore = cpuSeconds(server.child.pid);
    const outcomes = await goodTenant(server.url, key, jpeg, seconds * 1000);
    const cpu = cpuSeconds(server.child.pid) - cpuBefore;
    for (const stop of stops) stop();
    server.child.send("peak-rss");
    const [{ peakRss }] = await new Promise((resolve) => server.child.once("message", (m) => resolve([m])));
    const latencies = outcomes.map((outcome) => outcome.latency).sort((a, b) => a - b);
    const accepted = outcomes.filter((outcome) => outcome.status === 201).map((o) => o.latency);
    accepted.sort((a, b) => a - b);
    const byStatus = {};
    for (const outcome of outcomes) byStatus[outcome.status] = (byStatus[outcome.status] ?? 0) + 1;
    return {
      mode,
      uploads: outcomes.length,
      byStatus,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      acceptedP50: percentile(accepted, 50),
      acceptedP99: percentile(accepted, 99),
      attackerAnswers: statuses,
      cpuMsPerUpload: (cpu * 1000) / outcomes.length,
      peakRssMb: peakRss / 1e6,
    };
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    await rm(dataDir, { recursive: true, force: true });
  }
}

const jpeg = await fixture();
console.log(
  `fair uploads: ${accounts} trial accounts x ${connections} connections; good tenant: ${(jpeg.byteLength / 1024).toFixed(0)} KiB JPEG every ${everyMs} ms for ${seconds} s`,
);
const reference = await run("none", jpeg);
const rows = [reference];
for (const mode of values.modes.split(",")) rows.push(await run(mode, jpeg));
for (const row of rows) {
  console.log(
    `${row.mode.padEnd(8)} good tenant: ${row.uploads} uploads ${JSON.stringify(row.byStatus)}, ` +
      `latency p50 ${row.p50.toFixed(0)} ms p99 ${row.p99.toFixed(0)} ms ` +
      `(201s: p50 ${row.acceptedP50.toFixed(0)} ms, p99 ${row.acceptedP99.toFixed(0)} ms; ` +
      `p99 ${(row.p99 / reference.p99).toFixed(2)}x the reference); ` +
      `attackers' answers ${JSON.stringify(row.attackerAnswers)}; ` +
      `server CPU ${row.cpuMsPerUpload.toFixed(0)} ms per good upload, peak RSS ${row.peakRssMb.toFixed(0)} MB`,
  );
}
