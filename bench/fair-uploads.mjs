// Upload fairness of the prebuilt server (default limits) against accounts that hold upload slots
// with slow bodies: `--accounts` trial accounts each keep `--connections` uploads open (8, the
// per-account cap), sending the body of a declared 20 MB upload either one byte every 2 s
// (`trickle`, 16 B/s in all for 4 x 8) or at `--rate` bytes per second per connection (`rate`,
// 20 KB/s), and reconnect as soon as an upload is answered (408 cut-offs, 503s after 250 ms).
// Meanwhile another tenant uploads a 1920x1280 JPEG every `--every-ms`, one at a time, and the
// bench prints its outcomes and latency p50/p99. The reference in the same run is the same tenant
// on the same server with no attacker; the ratios compare each attack with it.
// Usage: npx tsx bench/fair-uploads.mjs [--seconds 45] [--accounts 4] [--connections 8]
//        [--rate 20000] [--every-ms 3000] [--modes trickle,rate]
// Run `pnpm build` first (the server is imported from its dist); run with tsx (the slow and whole
// uploads are @pixport/testing's, in TypeScript): npx tsx bench/fair-uploads.mjs.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { keepUploadingSlowly, uploadOnce } from "../packages/testing/src/slow-uploads.ts";
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

/** One attacking connection, reopened after each answer until stopped; counts answers by status. */
function attacker(url, key, mode, statuses) {
  const sending =
    mode === "trickle" ? { bytesPerTick: 1, everyMs: 2000 } : { bytesPerTick: rate / 10, everyMs: 100 };
  return keepUploadingSlowly({
    url,
    key,
    declaredBytes: 20_000_000,
    ...sending,
    pauseAfter503Ms: 250,
    onAnswer: (answer) => {
      const status = answer === null ? "reset" : answer.status;
      statuses[status] = (statuses[status] ?? 0) + 1;
    },
  });
}

/** The good tenant: one upload every `everyMs` (or right after a slower one), for `ms`. */
async function goodTenant(url, key, jpeg, ms) {
  const outcomes = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const started = performance.now();
    // Status 0: closed unanswered (node's client may read a 503 sent before the body as a reset).
    const answer = await uploadOnce(url, key, jpeg, { mimeType: "image/jpeg" });
    const status = answer.status === 0 ? "reset" : answer.status;
    const latency = performance.now() - started;
    outcomes.push({ status, latency });
    await sleep(Math.max(0, everyMs - latency));
  }
  return outcomes;
}

async function run(mode, jpeg) {
  const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bench-"));
  const server = await startChild(path.join(here, "pixport-child.mjs"), [dataDir], {
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
    await Promise.all(stops.map((stop) => stop()));
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
