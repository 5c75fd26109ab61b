// Origin images: pixport's http origin against IPX 3's HTTP storage, both transforming images that
// a local static web server holds (ETag, Last-Modified, Cache-Control, as a CMS or CDN origin sends
// them). Misses: a new (image, width, quality) per request over `--sources` distinct photo-like
// JPEGs; hits: one origin variant URL again and again, against a static file server streaming the
// same bytes. wrk, one thread, the same concurrency for every server, best of `--rounds`.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { originVariantUrl } from "@pixport/url-signer";
import { photoSources, startChild } from "./lib.mjs";
import { ensureWrk, load as loadWith, peakRss } from "./wrk.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "8" },
    rounds: { type: "string", default: "2" },
    sources: { type: "string", default: "40" },
    widths: { type: "string", default: "400-450" },
  },
});
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const [fromWidth, toWidth] = values.widths.split("-").map(Number);
const here = path.dirname(fileURLToPath(import.meta.url));
const SECRET = "bench-origin-secret-0123456789";
const ORIGIN = "web";
ensureWrk();

const dir = await mkdtemp(path.join(tmpdir(), "pixport-bench-origin-"));
const children = [];
const start = async (script, args, env) => {
  // e.g. BENCH_PIXPORT_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the pixport side.
  const nodeArgs = script.startsWith("pixport-")
    ? (process.env.BENCH_PIXPORT_NODE_ARGS?.split(" ") ?? [])
    : [];
  const child = await startChild(path.join(here, script), args, env, nodeArgs.filter(Boolean));
  children.push(child);
  return child;
};
const load = (server, paths) => loadWith(server, paths, dir, { concurrency, seconds });

try {
  const sources = await photoSources(Number(values.sources));
  await mkdir(path.join(dir, "origin"));
  for (const { name, bytes } of sources) await writeFile(path.join(dir, "origin", name), bytes);
  const origin = await start("static-file-server.mjs", [path.join(dir, "origin")]);
  const pixport = await start("pixport-child.mjs", [path.join(dir, "data")], {
    PIXPORT_BENCH_DELIVERY: JSON.stringify({
      signingKeys: [SECRET],
      cacheBytes: 2 * 1024 ** 3,
      origins: { [ORIGIN]: { type: "http", baseUrl: `${origin.url}/`, allowPrivateNetwork: true } },
    }),
  });
  const ipx = await start("ipx-server.mjs", [origin.url]);

  // Request i asks source i mod N at the next width; once every (source, width) pair is used the
  // quality steps down by `rounds`, and each round starts one lower, so no URL repeats in the run.
  const widths = toWidth - fromWidth + 1;
  const pairs = sources.length * widths;
  const count = Math.max(4000, seconds * 1000);
  const requests = (round) =>
    Array.from({ length: count }, (_, i) => ({
      name: sources[i % sources.length].name,
      width: fromWidth + (Math.floor(i / sources.length) % widths),
      quality: 80 - round - rounds * Math.floor(i / pairs),
    }));
  const pixportPath = async ({ name, width, quality }) =>
    new URL(
      await originVariantUrl({
        base: pixport.url,
        secret: SECRET,
        origin: ORIGIN,
        path: name,
        modifiers: [`w_${width}`, `q_${quality}`],
        ext: "jpeg",
      }),
    ).pathname;
  const ipxPath = ({ name, width, quality }) => `/w_${width},q_${quality}/${origin.url}/${name}`;

  // Both servers answer one request of each kind before anything is measured.
  const probe = requests(rounds)[0];
  for (const url of [`${pixport.url}${await pixportPath(probe)}`, `${ipx.url}${ipxPath(probe)}`]) {
    const answer = await fetch(url);
    const type = answer.headers.get("content-type");
    if (answer.status !== 200 || type !== "image/jpeg") throw new Error(`${url}: ${answer.status} ${type}`);
    await answer.arrayBuffer();
  }
  // The hit: one variant, made before the run; its bytes are the static file server's file.
  const hitPath = await pixportPath({ name: sources[0].name, width: 800, quality: 80 });
  const variant = new Uint8Array(await (await fetch(`${pixport.url}${hitPath}`)).arrayBuffer());
  await writeFile(path.join(dir, "variant.jpg"), variant);
  const staticFile = await start("static-file-server.mjs", [path.join(dir, "variant.jpg")]);

  const measured = { pixport: [], ipx: [], hit: [], static: [] };
  for (let round = 0; round < rounds; round += 1) {
    const list = requests(round);
    measured.pixport.push(await load(pixport, await Promise.all(list.map(pixportPath))));
    measured.ipx.push(await load(ipx, list.map(ipxPath)));
    measured.hit.push(await load(pixport, [hitPath]));
    measured.static.push(await load(staticFile, ["/"]));
  }
  // The best round by requests/s, with that round's CPU and p99 (other load only slows a round).
  const best = Object.fromEntries(
    Object.entries(measured).map(([name, list]) => [name, list.reduce((a, b) => (b.rps > a.rps ? b : a))]),
  );
  const peaks = {
    pixport: await peakRss(pixport.child),
    ipx: await peakRss(ipx.child),
    static: await peakRss(staticFile.child),
  };
  const mb = (bytes) => `${(bytes / 1e6).toFixed(0)} MB`;
  const row = (label, result, peak, ratio) =>
    console.log(
      `| ${label} | ${result.rps.toFixed(1)} | ${result.cpuPerRequest.toFixed(2)} (${result.mainCpuPerRequest.toFixed(2)}) | ${result.p99.toFixed(0)} | ${mb(peak)} | ${ratio} |` +
        (result.failures > 0 ? ` ${result.failures} failures` : ""),
    );
  console.log(
    `\norigin: wrk -t1 -c${concurrency}, ${seconds} s per measurement, best of ${rounds} rounds; ` +
      `${sources.length} origin JPEGs (1920x1280) on a local static server, a new (image, width) per miss (w_${fromWidth}-${toWidth}), q80 JPEG`,
  );
  console.log("| server | req/s | CPU ms per request (JS thread) | p99 ms | peak RSS | ratio |");
  console.log("|---|---|---|---|---|---|");
  const missRatio = best.pixport.rps / best.ipx.rps;
  row("pixport, http origin, misses", best.pixport, peaks.pixport, `${missRatio.toFixed(2)}x IPX`);
  row("IPX 3.1.1, HTTP storage, misses", best.ipx, peaks.ipx, "1.00x");
  const hitRatio = best.hit.rps / best.static.rps;
  row("pixport, http origin, cache hit", best.hit, peaks.pixport, `${hitRatio.toFixed(2)}x static`);
  row("static file (node:http)", best.static, peaks.static, "1.00x");
  const wrkCpu = Math.max(...Object.values(best).map((result) => result.wrkCpuPerRequest));
  console.log(`wrk's own CPU: at most ${wrkCpu.toFixed(2)} ms per request`);
  console.log(
    `misses / IPX: ${missRatio.toFixed(2)}x (target >= 1.2: ${missRatio >= 1.2 ? "met" : "NOT met"})`,
  );
  console.log(`peak RSS / IPX's: ${(peaks.pixport / peaks.ipx).toFixed(2)}x`);
} finally {
  for (const child of children) child.child.kill("SIGTERM");
  await rm(dir, { recursive: true, force: true });
}
