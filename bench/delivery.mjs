// Variant delivery on the prebuilt server against references, in one run, same concurrency, each
// server in its own child process (peak RSS measured separately):
// (a) cache hits: GET one signed variant URL (w_800.jpeg) again and again, against a bare
//     node:http server streaming the same bytes from a file. Target: at least 0.9x.
// (b) cache misses: a distinct width per request (w_400.jpeg, w_401.jpeg, ...) against IPX 3 doing
//     the same resize of the same local file (target: at least 1.2x) and against a raw sharp GET
//     server (target: at least 0.95x). A second pixport server with the codec's decoded-source
//     cache off runs the same misses: the cost of a miss whose source is not kept decoded.
// Usage: node bench/delivery.mjs [--seconds 10] [--concurrency 4] [--rounds 2]
// Run `npx --yes pnpm@12 run build` first.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { variantUrl } from "@pixport/url-signer";
import { fixture, startChild, uploadTo } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    concurrency: { type: "string", default: "4" },
    rounds: { type: "string", default: "2" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const here = path.dirname(fileURLToPath(import.meta.url));
const SECRET = "bench-delivery-secret-0123456789";

function peakRss(child) {
  return new Promise((resolve) => {
    child.once("message", (message) => resolve(message.peakRss));
    child.send("peak-rss");
  });
}

/** Runs `send(i)` from `concurrency` loops for `seconds`; requests/s and p99 ms. */
async function load(send) {
  const latencies = [];
  let index = 0;
  let failures = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        if (!(await send(index++))) failures++;
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / seconds,
    p99: latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN,
    failures,
  };
}

const fetchOk = async (url) => {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status === 200;
};

const dir = await mkdtemp(path.join(tmpdir(), "pixport-bench-delivery-"));
const children = [];
try {
  const source = await fixture();
  await writeFile(path.join(dir, "fixture.jpg"), source);
  /** A pixport child with the fixture uploaded and published: the child, its URL and the image id. */
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
    const { key, id } = await uploadTo(server, source, "fixture.jpg");
    await fetch(`${server.url}/v1/images/${id}/publish`, {
      method: "POST",
      headers: { "x-api-key": key },
    });
    return { ...server, imageId: id };
  };
  const pixport = await startPixport("data", {});
  const image = { id: pixport.imageId };
  // The same server with the codec's decoded-source cache off: what a miss costs when its source
  // is not kept decoded (a source's first variants, or more hot sources than the cache holds).
  const cold = await startPixport("data-cold", { PIXPORT_BENCH_SOURCE_CACHE_BYTES: "0" });

  // (a) the hit: one variant, made once before the run; its bytes are the static server's file.
  const hitUrl = await variantUrl({
    base: pixport.url,
    secret: SECRET,
    imageId: image.id,
    modifiers: ["w_800"],
    ext: "jpeg",
  });
  const variant = new Uint8Array(await (await fetch(hitUrl)).arrayBuffer());
  await writeFile(path.join(dir, "variant.jpg"), variant);
  const staticServer = await startChild(path.join(here, "static-file-server.mjs"), [
    path.join(dir, "variant.jpg"),
  ]);
  children.push(staticServer);
  const ipx = await startChild(path.join(here, "ipx-server.mjs"), [dir]);
  children.push(ipx);
  const rawSharp = await startChild(path.join(here, "raw-sharp-get-server.mjs"), [
    path.join(dir, "fixture.jpg"),
  ]);
  children.push(rawSharp);

  // Miss URLs are signed before the run, so signing is not in the measurement (a page builds them).
  // Every miss is a width between 400 and 1799 px (never an enlargement of the 1920 px source) at a
  // quality of its round, the same sequence for all three servers, so each request is new to
  // pixport's cache and the same work everywhere.
  const widthOf = (i) => 400 + (i % 1400);
  const results = { hit: [], static: [], miss: [], cold: [], ipx: [], sharp: [] };
  for (let round = 0; round < rounds; round += 1) {
    const quality = 80 - round;
    const urls = [];
    const coldUrls = [];
    for (let i = 0; i < 1400; i += 1) {
      for (const [server, list] of [
        [pixport, urls],
        [cold, coldUrls],
      ]) {
        list.push(
          await variantUrl({
            base: server.url,
            secret: SECRET,
            imageId: server.imageId,
            modifiers: [`w_${widthOf(i)}`, `q_${quality}`],
            ext: "jpeg",
          }),
        );
      }
    }
    results.hit.push(await load(() => fetchOk(hitUrl)));
    results.static.push(await load(() => fetchOk(staticServer.url)));
    results.miss.push(await load((i) => fetchOk(urls[i % urls.length])));
    results.cold.push(await load((i) => fetchOk(coldUrls[i % coldUrls.length])));
    results.ipx.push(await load((i) => fetchOk(`${ipx.url}/w_${widthOf(i)},q_${quality}/fixture.jpg`)));
    results.sharp.push(await load((i) => fetchOk(`${rawSharp.url}/?width=${widthOf(i)}&quality=${quality}`)));
  }
  const best = (list) => list.reduce((a, b) => (b.rps > a.rps ? b : a));
  const line = (name, result) =>
    `${name.padEnd(34)} ${result.rps.toFixed(1).padStart(8)} req/s  p99 ${result.p99.toFixed(1).padStart(7)} ms  failures ${result.failures}`;
  console.log(`delivery, concurrency ${concurrency}, ${seconds} s per measurement, best of ${rounds} rounds`);
  const hit = best(results.hit);
  const stat = best(results.static);
  const miss = best(results.miss);
  const ipxBest = best(results.ipx);
  const sharpBest = best(results.sharp);
  console.log(line("pixport variant, cache hit", hit));
  console.log(line("static file (node:http)", stat));
  const coldBest = best(results.cold);
  console.log(line("pixport variant, cache miss", miss));
  console.log(line("  the same, source cache off", coldBest));
  console.log(line("IPX 3, same resize", ipxBest));
  console.log(line("raw sharp GET, same resize", sharpBest));
  const ratio = (a, b, target) =>
    `${(a.rps / b.rps).toFixed(3)} (target >= ${target}: ${a.rps / b.rps >= target ? "met" : "NOT met"})`;
  console.log(`hit / static file: ${ratio(hit, stat, 0.9)}`);
  console.log(`miss / IPX: ${ratio(miss, ipxBest, 1.2)}`);
  console.log(`miss / raw sharp: ${ratio(miss, sharpBest, 0.95)}`);
  console.log(
    `source cache off: ${(coldBest.rps / ipxBest.rps).toFixed(3)}x IPX, ${(coldBest.rps / sharpBest.rps).toFixed(3)}x raw sharp`,
  );
  const names = ["pixport", "pixport (source cache off)", "static", "ipx", "raw sharp"];
  const peaks = await Promise.all(
    [pixport, cold, staticServer, ipx, rawSharp].map((child) => peakRss(child.child)),
  );
  console.log(
    `peak RSS: ${peaks.map((bytes, index) => `${names[index]} ${(bytes / 1e6).toFixed(0)} MB`).join(", ")}`,
  );
} finally {
  for (const child of children) child.child.kill("SIGTERM");
  await rm(dir, { recursive: true, force: true });
}
