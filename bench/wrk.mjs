// wrk-driven measurements shared by bench/delivery.mjs and bench/origin.mjs: requests/s, p99, and
// the CPU per request of a server's process tree (from /proc), with wrk's own CPU beside it.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { descendants } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

/** Installs Debian's wrk (apt-get) when it is missing. */
export function ensureWrk() {
  if (spawnSync("wrk", ["--version"]).error === undefined) return;
  console.log("installing Debian's wrk (apt-get) ...");
  execFileSync("sh", ["-c", "apt-get update -qq && apt-get install -y -qq wrk"], { stdio: "inherit" });
}

/** CPU time of a process and its descendants, ms (utime + stime from /proc; 0 once gone). */
export function treeCpuMs(pid) {
  let ticks = 0;
  for (const each of [pid, ...descendants(pid)]) {
    try {
      const stat = readFileSync(`/proc/${each}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone between two reads
    }
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/** CPU time of a process's main thread (the JavaScript thread of a node server), ms. */
export function mainThreadCpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/**
 * CPU time of a process tree's threads by thread name (the JavaScript thread is "node"; libuv's
 * pool, where sharp's pipelines and file I/O run, "libuv-worker"; V8's helpers "V8 DefaultWorke";
 * libvips' own threads), ms.
 */
export function threadCpuMs(pid) {
  const byName = {};
  for (const each of [pid, ...descendants(pid)]) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${each}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const stat = readFileSync(`/proc/${each}/task/${task}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/[0-9]+$/, "");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        byName[name] = (byName[name] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
      } catch {
        // gone between two reads
      }
    }
  }
  return byName;
}

/** CPU of this process's reaped children (wrk runs), ms. */
export function childrenCpuMs() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

export function peakRss(child) {
  return new Promise((resolve) => {
    child.once("message", (message) => resolve(message.peakRss));
    child.send("peak-rss");
  });
}

/**
 * wrk (one thread, `concurrency` connections) against `server` for `seconds`, GETting `paths` in turn: requests/s, p99 ms, failures, the
 * server's CPU ms per request, and wrk's own CPU ms per request.
 */
export async function load(server, paths, dir, { concurrency, seconds }) {
  const list = path.join(dir, "paths.txt");
  await writeFile(list, `${paths.join("\n")}\n`);
  const cpuBefore = treeCpuMs(server.child.pid);
  const mainBefore = mainThreadCpuMs(server.child.pid);
  const threadsBefore = threadCpuMs(server.child.pid);
  const wrkBefore = childrenCpuMs();
  const output = await new Promise((resolve, reject) => {
    const wrk = spawn(
      "wrk",
      [
        "-t1",
        `-c${concurrency}`,
        `-d${seconds}s`,
        "--timeout",
        "60s",
        "-s",
        path.join(here, "wrk-paths.lua"),
        server.url,
      ],
      { env: { ...process.env, WRK_PATHS: list }, stdio: ["ignore", "pipe", "inherit"] },
    );
    let text = "";
    wrk.stdout.on("data", (chunk) => {
      text += chunk;
    });
    wrk.once("error", reject);
    wrk.once("exit", () => resolve(text));
  });
  const cpu = treeCpuMs(server.child.pid) - cpuBefore;
  const mainCpu = mainThreadCpuMs(server.child.pid) - mainBefore;
  const threads = Object.entries(threadCpuMs(server.child.pid)).map(([name, ms]) => [
    name,
    ms - (threadsBefore[name] ?? 0),
  ]);
  const wrkCpu = childrenCpuMs() - wrkBefore;
  const match = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(output);
  if (match === null) throw new Error(`wrk printed no result: ${output}`);
  const [requests, durationUs, p99Us, badStatus, socketErrors] = match.slice(1).map(Number);
  if (paths.length > 1 && requests > paths.length)
    console.log(`  (wrk wrapped around the ${paths.length} paths: some were repeats)`);
  return {
    rps: requests / (durationUs / 1e6),
    p99: p99Us / 1000,
    failures: badStatus + socketErrors,
    cpuPerRequest: cpu / Math.max(1, requests),
    mainCpuPerRequest: mainCpu / Math.max(1, requests),
    threadsPerRequest: Object.fromEntries(threads.map(([name, ms]) => [name, ms / Math.max(1, requests)])),
    wrkCpuPerRequest: wrkCpu / Math.max(1, requests),
  };
}
