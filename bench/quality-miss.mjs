// Delivery misses with `q_auto` against the same misses at the format's fixed default quality,
// through the prebuilt server (sharp, filesystem storage, the default decoded-source cache).
//
//   node bench/quality-miss.mjs [--widths 320-640] [--step 40] [--formats jpeg,webp,avif]
//
// Two source sets, reported apart: the 16 real photographs of the photo corpus (fetched first by
// scripts/fetch-photos.mjs; 300 to 1,024 px wide, so decoding is cheap and the encode is most of a
// miss: the hard case for this ratio), and 16 camera-sized JPEGs (1920 x 1280, bench/lib.mjs
// photoSources: textured, film grain). Every (source, width) pair is asked once per format at the
// fixed default (`w_{width}.{format}`) and once with `q_auto` (`q_auto,w_{width}.{format}`), one
// request at a time, the mode asked first alternating from pair to pair; every answer must be a
// MISS. Prints per set and format the median and p99 latency of each mode, the median of each
// pair's q_auto / fixed latency, and the server's CPU time per request (every thread, read from the
// child before and after each request), with the peak RSS of the server at the end.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { variantUrl } from "@pixport/url-signer";
import { fetchPhotos, PHOTOS } from "../scripts/fetch-photos.mjs";
import { photoSources, startChild, uploadTo } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    widths: { type: "string", default: "320-640" },
    step: { type: "string", default: "40" },
    formats: { type: "string", default: "jpeg,webp,avif" },
  },
});
const [fromWidth, toWidth] = values.widths.split("-").map(Number);
const widths = [];
for (let width = fromWidth; width <= toWidth; width += Number(values.step)) widths.push(width);
const formats = values.formats.split(",");
const here = path.dirname(fileURLToPath(import.meta.url));
const SECRET = "bench-quality-miss-secret-0123456789";

/** Asks the child something over IPC and resolves with its first answer that has `field`. */
function ask(child, message, field) {
  return new Promise((resolve) => {
    const listener = (answer) => {
      if (answer?.[field] === undefined) return;
      child.off("message", listener);
      resolve(answer[field]);
    };
    child.on("message", listener);
    child.send(message);
  });
}

const sorted = (values) => [...values].sort((a, b) => a - b);
const median = (values) => sorted(values)[Math.floor((values.length - 1) / 2)];
const p99 = (values) => sorted(values)[Math.ceil(0.99 * values.length) - 1];

/** One request: its latency and the server's CPU time, checked to be a miss of the right type. */
async function miss(server, imageId, modifiers, format) {
  const url = await variantUrl({ base: server.url, secret: SECRET, imageId, modifiers, ext: format });
  const cpuBefore = await ask(server.child, "cpu-usage", "cpuMicros");
  const started = performance.now();
  const response = await fetch(url);
  await response.arrayBuffer();
  const ms = performance.now() - started;
  const cpuMs = ((await ask(server.child, "cpu-usage", "cpuMicros")) - cpuBefore) / 1000;
  const type = response.headers.get("content-type");
  if (response.status !== 200 || type !== `image/${format}` || response.headers.get("x-cache") !== "MISS") {
    throw new Error(`${url}: ${response.status} ${type} ${response.headers.get("x-cache")}`);
  }
  return { ms, cpuMs };
}

async function measure(title, sources) {
  const dir = await mkdtemp(path.join(tmpdir(), "pixport-bench-quality-miss-"));
  const server = await startChild(path.join(here, "pixport-child.mjs"), [dir], {
    PIXPORT_BENCH_DELIVERY: JSON.stringify({ signingKeys: [SECRET], cacheBytes: 2 * 1024 ** 3 }),
  });
  try {
    const ids = [];
    for (const source of sources) {
      const { key, id } = await uploadTo(server, source.bytes, source.name);
      await fetch(`${server.url}/v1/images/${id}/publish`, { method: "POST", headers: { "x-api-key": key } });
      ids.push(id);
    }
    const rows = Object.fromEntries(formats.map((format) => [format, { fixed: [], auto: [], ratios: [] }]));
    let pair = 0;
    for (const width of widths) {
      for (const id of ids) {
        for (const format of formats) {
          const row = rows[format];
          const ask = (auto) => miss(server, id, auto ? ["q_auto", `w_${width}`] : [`w_${width}`], format);
          const firstAuto = pair % 2 === 1;
          const first = await ask(firstAuto);
          const second = await ask(!firstAuto);
          const [fixed, auto] = firstAuto ? [second, first] : [first, second];
          row.fixed.push(fixed);
          row.auto.push(auto);
          row.ratios.push(auto.ms / fixed.ms);
        }
        pair += 1;
      }
    }
    const peak = await ask(server.child, "peak-rss", "peakRss");
    console.log(`\n${title}: ${sources.length} sources x ${widths.length} widths (${widths.join(", ")})`);
    console.log(
      "| format | fixed median / p99 ms | q_auto median / p99 ms | **q_auto / fixed** (median of pairs) | CPU ms per request, fixed / q_auto | **CPU ratio** |",
    );
    console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (const [format, { fixed, auto, ratios }] of Object.entries(rows)) {
      const ms = (runs) => runs.map((run) => run.ms);
      const cpu = (runs) => median(runs.map((run) => run.cpuMs));
      console.log(
        `| ${format} | ${median(ms(fixed)).toFixed(1)} / ${p99(ms(fixed)).toFixed(1)} | ${median(ms(auto)).toFixed(1)} / ${p99(ms(auto)).toFixed(1)} | **${median(ratios).toFixed(2)}x** | ${cpu(fixed).toFixed(1)} / ${cpu(auto).toFixed(1)} | **${(cpu(auto) / cpu(fixed)).toFixed(2)}x** |`,
      );
    }
    console.log(`peak RSS of the server: ${Math.round(peak / 1024 ** 2)} MB`);
  } finally {
    server.child.kill("SIGTERM");
    await new Promise((resolve) => server.child.once("exit", resolve));
    await rm(dir, { recursive: true, force: true });
  }
}

const photosDir = fetchPhotos();
const photos = PHOTOS.map(({ file }) => ({ name: file, bytes: readFileSync(path.join(photosDir, file)) }));
await measure("real photographs (the photo corpus)", photos);
await measure("camera-sized JPEGs (1920 x 1280)", await photoSources(16));
