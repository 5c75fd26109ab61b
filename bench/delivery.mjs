import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { variantUrl } from "@pixport/url-signer";
import { fixture, photoSources, startChild, uploadTo } from "./lib.mjs";
import { ensureWrk, load as loadWith, peakRss } from "./wrk.mjs";

const { values } = parseArgs({
  options: {
    mode: { type: "string", default: "both" },
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "2" },
    sources: { type: "string", default: "40" },
    "rotating-widths": { type: "string", default: "400-450" },
    threads: { type: "boolean", default: false },
    // Adds the pixport server of another checkout (built, e.g. an earlier commit's clone), measured
    // in every round beside this one: before and after a change, in the same run.
    before: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const sourceCount = Number(values.sources);
const [rotatingFrom, rotatingTo] = values["rotating-widths"].split("-").map(Number);
const modes = values.mode === "both" ? ["one", "rotating"] : [values.mode];
const here = path.dirname(fileURLToPath(import.meta.url));
const beforeDir = values.before === undefined ? undefined : path.resolve(values.before);
const SECRET = "bench-delivery-secret-0123456789";
ensureWrk();

const load = (server, paths, dir) => loadWith(server, paths, dir, { concurrency, seconds });

/** One mode's run: its servers, their measurements, and the summary rows. */
async function runMode(mode) {
  const dir = await mkdtemp(path.join(tmpdir(), "pixport-bench-delivery-"));
  const children = [];
  try {
    const sources =
      mode === "one" ? [{ name: "fixture.jpg", bytes: await fixture() }] : await photoSources(sourceCount);
    const files = path.join(dir, "sources");
    await mkdir(files);
    for (const source of sources) await writeFile(path.join(files, source.name), source.bytes);
    /** A pixport child with every source uploaded and published: the child, its URL and image ids. */
    const startPixport = async (name, extraEnv, checkout = path.join(here, "..")) => {
      const server = await startChild(
        path.join(checkout, "bench", "pixport-child.mjs"),
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
    const before = beforeDir === undefined ? undefined : await startPixport("data-before", {}, beforeDir);
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

    const measured = {
      pixport: [],
      before: [],
      cold: [],
      ipx: [],
      sharp: [],
      hit: [],
      beforeHit: [],
      static: [],
    };
    let hit;
    let beforeHit;
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
      if (before !== undefined) {
        const beforeUrl = await variantUrl({
          base: before.url,
          secret: SECRET,
          imageId: before.imageIds[0],
          modifiers: ["w_800"],
          ext: "jpeg",
        });
        await (await fetch(beforeUrl)).arrayBuffer();
        beforeHit = new URL(beforeUrl).pathname;
      }
    }
    for (let round = 0; round < rounds; round += 1) {
      if (hit !== undefined) {
        measured.hit.push(await load(pixport, [hit], dir));
        measured.static.push(await load(staticServer, ["/"], dir));
      }
      if (beforeHit !== undefined) measured.beforeHit.push(await load(before, [beforeHit], dir));
      measured.pixport.push(await load(pixport, await pixportPaths(pixport, round), dir));
      if (before !== undefined)
        measured.before.push(await load(before, await pixportPaths(before, round), dir));
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
      ...(before ? { before } : {}),
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
  before: "pixport before (--before), default",
  beforeHit: "pixport before (--before), cache hit",
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
    const miss = name !== "hit" && name !== "static" && name !== "beforeHit";
    const ratios = miss
      ? `${(result.rps / results.ipx.rps).toFixed(2)}x | ${(result.rps / results.sharp.rps).toFixed(2)}x`
      : " | ";
    const peak = peaks[name === "hit" ? "pixport" : name === "beforeHit" ? "before" : name];
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
  if (results.before !== undefined) {
    const ratio = (a, b) => (a / b).toFixed(3);
    console.log(
      `after / before (${beforeDir}): misses ${ratio(pixport.rps, results.before.rps)}x req/s, ` +
        `CPU per miss ${ratio(pixport.cpuPerRequest, results.before.cpuPerRequest)}x, p99 ${ratio(pixport.p99, results.before.p99)}x, ` +
        `peak RSS ${ratio(peaks.pixport, peaks.before)}x` +
        (hit !== undefined && results.beforeHit !== undefined
          ? `; hits ${ratio(hit.rps, results.beforeHit.rps)}x req/s, CPU per hit ${ratio(hit.cpuPerRequest, results.beforeHit.cpuPerRequest)}x`
          : ""),
    );
  }
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
