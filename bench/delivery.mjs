// Variant delivery on the prebuilt server against references, in one run, same concurrency, each
// server in its own child process, loaded by wrk (C, one thread, in its own process: its CPU is
// reported beside the servers'). Two modes, each with its own fresh servers:
// - one source: (a) cache hits: GET one signed variant URL (w_800.jpeg) again and again, against
//   a bare node:http server streaming the same bytes from a file (target: at least 0.9x);
//   (b) cache misses: a new width per request (w_400..w_1799) of one 1920x1280 JPEG.
// - rotating sources: cache misses over --sources distinct 1920x1280 JPEGs (crops, flips and hue
//   shifts of examples/assets/cat.jpg with film grain, and generated textured pictures), a new
//   (image, width) per request: request i asks source i mod N at the next width of
//   --rotating-widths, so each source's variants come once and the sources rotate, as a CDN in
//   front of the server sends them.
// Misses run against IPX 3 doing the same resize of the same local files and a raw sharp GET
// server (read, decode with shrink-on-load, resize, encode), and against a second pixport server
// with the codec's decoded-source cache off. Every miss URL is new to every server (the quality
// steps down once the (image, width) pairs are used up), so no server answers from a cache of
// results. Reported per server: requests/s, CPU ms per request (utime + stime of the server's
// process tree from /proc, over the measurement; in brackets its JavaScript thread's share), p99
// latency, and peak RSS (VmHWM) over its mode.
// Targets: one source >= 1.5x IPX; rotating >= 1.2x IPX and >= 1.0x raw sharp, CPU per miss no
// more than the cache-off server's; peak RSS <= 1.5x IPX's in both modes.
// Usage: node bench/delivery.mjs [--mode both|one|rotating] [--seconds 8] [--rounds 2]
//          [--concurrency 8] [--sources 40] [--rotating-widths 400-450] [--threads]
// (--threads: each server's CPU per request split by thread name as well.)
// Run `npx --yes pnpm@12 run build` first. Installs Debian's wrk (apt-get) when it is missing.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { variantUrl } from "@pixport/url-signer";
import { descendants, fixture, startChild, uploadTo } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    mode: { type: "string", default: "both" },
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "2" },
    sources: { type: "string", default: "40" },
    "rotating-widths": { type: "string", default: "400-450" },
    threads: { type: "boolean", default: false },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const sourceCount = Number(values.sources);
const [rotatingFrom, rotatingTo] = values["rotating-widths"].split("-").map(Number);
const modes = values.mode === "both" ? ["one", "rotating"] : [values.mode];
const here = path.dirname(fileURLToPath(import.meta.url));
const SECRET = "bench-delivery-secret-0123456789";
const CLOCK_TICKS = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

if (spawnSync("wrk", ["--version"]).error !== undefined) {
  console.log("installing Debian's wrk (apt-get) ...");
  execFileSync("sh", ["-c", "apt-get update -qq && apt-get install -y -qq wrk"], { stdio: "inherit" });
}

/** CPU time of a process and its descendants, ms (utime + stime from /proc; 0 once gone). */
function treeCpuMs(pid) {
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
function mainThreadCpuMs(pid) {
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
function threadCpuMs(pid) {
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
function childrenCpuMs() {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}

function peakRss(child) {
  return new Promise((resolve) => {
    child.once("message", (message) => resolve(message.peakRss));
    child.send("peak-rss");
  });
}

/**
 * wrk against `server` for `seconds`, GETting `paths` in turn: requests/s, p99 ms, failures, the
 * server's CPU ms per request, and wrk's own CPU ms per request.
 */
async function load(server, paths, dir) {
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

/**
 * `count` distinct photo-like 1920x1280 JPEGs (q85), made once and kept in the system's temporary
 * directory: crops, flips and hue shifts of examples/assets/cat.jpg (960x640, enlarged) under film
 * grain, and gradient-and-noise pictures from other seeds, alternating.
 */
async function rotatingSources(count) {
  const cache = path.join(tmpdir(), "pixport-bench-delivery-sources-v1");
  await mkdir(cache, { recursive: true });
  const { default: sharp } = await import("sharp");
  const cat = path.join(here, "..", "examples", "assets", "cat.jpg");
  const { width: catWidth, height: catHeight } = await sharp(cat).metadata();
  let grain;
  const files = [];
  for (let index = 0; index < count; index += 1) {
    const file = path.join(cache, `source-${String(index).padStart(3, "0")}.jpg`);
    files.push(file);
    if (existsSync(file)) continue;
    if (index % 2 === 1) {
      await writeFile(file, await fixture({ seed: 7 + index, quality: 85 }));
      continue;
    }
    grain ??= await sharp({
      create: {
        width: 1920,
        height: 1280,
        channels: 3,
        background: "#808080",
        noise: { type: "gaussian", mean: 128, sigma: 12 },
      },
    })
      .raw()
      .toBuffer();
    const variant = index / 2;
    const width = Math.round(catWidth * (0.7 + 0.015 * (variant % 20)));
    const height = Math.round((width * 2) / 3);
    let picture = sharp(cat)
      .extract({
        left: (variant * 37) % (catWidth - width + 1),
        top: (variant * 23) % (catHeight - height + 1),
        width,
        height,
      })
      .resize(1920, 1280)
      .modulate({ hue: (variant * 29) % 360 });
    if (variant % 2 === 1) picture = picture.flop();
    const base = await picture.raw().toBuffer();
    await writeFile(
      file,
      await sharp(base, { raw: { width: 1920, height: 1280, channels: 3 } })
        .composite([{ input: grain, raw: { width: 1920, height: 1280, channels: 3 }, blend: "soft-light" }])
        .jpeg({ quality: 85 })
        .toBuffer(),
    );
  }
  return Promise.all(files.map(async (file) => ({ name: path.basename(file), bytes: await readFile(file) })));
}

/** One mode's run: its servers, their measurements, and the summary rows. */
async function runMode(mode) {
  const dir = await mkdtemp(path.join(tmpdir(), "pixport-bench-delivery-"));
  const children = [];
  try {
    const sources =
      mode === "one" ? [{ name: "fixture.jpg", bytes: await fixture() }] : await rotatingSources(sourceCount);
    const files = path.join(dir, "sources");
    await mkdir(files);
    for (const source of sources) await writeFile(path.join(files, source.name), source.bytes);
    /** A pixport child with every source uploaded and published: the child, its URL and image ids. */
    const startPixport = async (name, extraEnv) => {
      const server = await startChild(
        path.join(here, "pixport-child.mjs"),
        [path.join(dir, name)],
        {
          PIXPORT_BENCH_DELIVERY: JSON.stringify({ signingKeys: [SECRET], cacheBytes: 2 * 1024 ** 3 }),
          ...extraEnv,
        },
        // e.g. BENCH_PIXPORT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the pixport side.
        process.env.BENCH_PIXPORT_NODE_ARGS?.split(" ").filter(Boolean) ?? [],
      );
      children.push(server);
      const imageIds = [];
      for (const source of sources) {
        const { key, id } = await uploadTo(server, source.bytes, source.name);
        await fetch(`${server.url}/v1/images/${id}/publish`, {
          method: "POST",
          headers: { "x-api-key": key },
        });
        imageIds.push(id);
      }
      return { ...server, imageIds };
    };
    const pixport = await startPixport("data", {});
    // The same server with the codec's decoded-source cache off: what a miss costs when no source
    // is kept decoded.
    const cold = await startPixport("data-cold", { PIXPORT_BENCH_SOURCE_CACHE_BYTES: "0" });
    const ipx = await startChild(path.join(here, "ipx-server.mjs"), [files]);
    children.push(ipx);
    const rawSharp = await startChild(path.join(here, "raw-sharp-get-server.mjs"), [files]);
    children.push(rawSharp);

    // The request sequence: request i asks source i mod N at the next width; once every (source,
    // width) pair is used, the quality steps down by `rounds`, and each round starts one lower, so
    // no URL repeats in the run. Paths are built (and signed) before a measurement.
    const [fromWidth, toWidth] = mode === "one" ? [400, 1799] : [rotatingFrom, rotatingTo];
    const widths = toWidth - fromWidth + 1;
    const pairs = sources.length * widths;
    const count = Math.max(4000, seconds * 1000);
    const requestOf = (round, i) => ({
      source: i % sources.length,
      width: fromWidth + (Math.floor(i / sources.length) % widths),
      quality: 80 - round - rounds * Math.floor(i / pairs),
    });
    const pixportPaths = async (server, round) => {
      const paths = [];
      for (let i = 0; i < count; i += 1) {
        const { source, width, quality } = requestOf(round, i);
        const url = await variantUrl({
          base: server.url,
          secret: SECRET,
          imageId: server.imageIds[source],
          modifiers: [`w_${width}`, `q_${quality}`],
          ext: "jpeg",
        });
        paths.push(new URL(url).pathname);
      }
      return paths;
    };
    const referencePaths = (round, format) =>
      Array.from({ length: count }, (_, i) => {
        const { source, width, quality } = requestOf(round, i);
        return format(sources[source].name, width, quality);
      });

    const measured = { pixport: [], cold: [], ipx: [], sharp: [], hit: [], static: [] };
    let hit;
    let staticServer;
    if (mode === "one") {
      // The hit: one variant, made once before the run; its bytes are the static server's file.
      const hitUrl = await variantUrl({
        base: pixport.url,
        secret: SECRET,
        imageId: pixport.imageIds[0],
        modifiers: ["w_800"],
        ext: "jpeg",
      });
      const variant = new Uint8Array(await (await fetch(hitUrl)).arrayBuffer());
      await writeFile(path.join(dir, "variant.jpg"), variant);
      staticServer = await startChild(path.join(here, "static-file-server.mjs"), [
        path.join(dir, "variant.jpg"),
      ]);
      children.push(staticServer);
      hit = new URL(hitUrl).pathname;
    }
    for (let round = 0; round < rounds; round += 1) {
      if (hit !== undefined) {
        measured.hit.push(await load(pixport, [hit], dir));
        measured.static.push(await load(staticServer, ["/"], dir));
      }
      measured.pixport.push(await load(pixport, await pixportPaths(pixport, round), dir));
      measured.cold.push(await load(cold, await pixportPaths(cold, round), dir));
      measured.ipx.push(
        await load(
          ipx,
          referencePaths(round, (name, w, q) => `/w_${w},q_${q}/${name}`),
          dir,
        ),
      );
      measured.sharp.push(
        await load(
          rawSharp,
          referencePaths(round, (name, w, q) => `/?src=${name}&width=${w}&quality=${q}`),
          dir,
        ),
      );
    }
    const servers = {
      pixport,
      cold,
      ipx,
      sharp: rawSharp,
      ...(staticServer ? { static: staticServer } : {}),
    };
    const peaks = {};
    for (const [name, server] of Object.entries(servers)) peaks[name] = await peakRss(server.child);
    // The best round by requests/s, with that round's CPU and p99 (the machine's other load only
    // ever slows a round down).
    const best = (list) => list.reduce((a, b) => (b.rps > a.rps ? b : a));
    return {
      mode,
      sources: sources.length,
      widths: `${fromWidth}-${toWidth}`,
      results: Object.fromEntries(
        Object.entries(measured)
          .filter(([, list]) => list.length > 0)
          .map(([name, list]) => [name, best(list)]),
      ),
      peaks,
    };
  } finally {
    for (const child of children) child.child.kill("SIGTERM");
    await rm(dir, { recursive: true, force: true });
  }
}

const LABELS = {
  pixport: "pixport, default",
  cold: "pixport, source cache off",
  ipx: "IPX 3.1.1",
  sharp: "raw sharp",
  hit: "pixport variant, cache hit",
  static: "static file (node:http)",
};
const started = performance.now();
const reports = [];
for (const mode of modes) reports.push(await runMode(mode));
const mb = (bytes) => (bytes / 1e6).toFixed(0);
const verdict = (value, target) =>
  `${value.toFixed(2)}x (target >= ${target}: ${value >= target ? "met" : "NOT met"})`;
console.log(
  `\ndelivery: wrk -t1 -c${concurrency}, ${seconds} s per measurement, best of ${rounds} rounds, ` +
    `${((performance.now() - started) / 1000).toFixed(0)} s in all`,
);
for (const { mode, sources, widths, results, peaks } of reports) {
  const title =
    mode === "one"
      ? `one source (1920x1280 JPEG), a new width per request (w_${widths}), q80 JPEG`
      : `rotating sources (${sources} distinct 1920x1280 JPEGs), a new (image, width) per request (w_${widths}), q80 JPEG`;
  console.log(`\n${title}`);
  console.log(
    "| server | req/s | CPU ms per request (JS thread) | p99 ms | peak RSS | vs IPX | vs raw sharp |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const [name, result] of Object.entries(results)) {
    const miss = name !== "hit" && name !== "static";
    const ratios = miss
      ? `${(result.rps / results.ipx.rps).toFixed(2)}x | ${(result.rps / results.sharp.rps).toFixed(2)}x`
      : " | ";
    const peak = peaks[name === "hit" ? "pixport" : name];
    console.log(
      `| ${LABELS[name]} | ${result.rps.toFixed(1)} | ${result.cpuPerRequest.toFixed(1)} (${result.mainCpuPerRequest.toFixed(1)}) | ${result.p99.toFixed(0)} | ${mb(peak)} MB | ${ratios} |` +
        (result.failures > 0 ? ` ${result.failures} failures` : ""),
    );
  }
  if (values.threads) {
    for (const [name, result] of Object.entries(results)) {
      const split = Object.entries(result.threadsPerRequest)
        .filter(([, ms]) => ms >= 0.05)
        .sort((a, b) => b[1] - a[1])
        .map(([thread, ms]) => `${thread} ${ms.toFixed(2)}`)
        .join(", ");
      console.log(`  CPU ms per request by thread, ${LABELS[name]}: ${split}`);
    }
  }
  const wrkCpu = Math.max(...Object.values(results).map((result) => result.wrkCpuPerRequest));
  console.log(`wrk's own CPU: at most ${wrkCpu.toFixed(2)} ms per request`);
  const { pixport, cold, ipx, sharp, hit } = results;
  if (hit !== undefined) console.log(`hit / static file: ${verdict(hit.rps / results.static.rps, 0.9)}`);
  console.log(`misses / IPX: ${verdict(pixport.rps / ipx.rps, mode === "one" ? 1.5 : 1.2)}`);
  console.log(`misses / raw sharp: ${verdict(pixport.rps / sharp.rps, mode === "one" ? 0.95 : 1.0)}`);
  const cpuRatio = pixport.cpuPerRequest / cold.cpuPerRequest;
  console.log(
    `CPU per miss / cache off: ${cpuRatio.toFixed(2)}x (target <= 1: ${cpuRatio <= 1 ? "met" : "NOT met"}); ` +
      `cache off: ${(cold.rps / ipx.rps).toFixed(2)}x IPX, ${(cold.rps / sharp.rps).toFixed(2)}x raw sharp`,
  );
  const rssRatio = peaks.pixport / peaks.ipx;
  console.log(
    `peak RSS / IPX's: ${rssRatio.toFixed(2)}x (target <= 1.5: ${rssRatio <= 1.5 ? "met" : "NOT met"})`,
  );
}
