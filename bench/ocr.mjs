// OCR accuracy, time and memory, side by side in one run, on the documents of the OCR suite
// (OCR_DOCUMENT_SUITE: 22 documents rendered from known text, each at two sizes, 1000-3000 px):
// - cli: Debian's `tesseract` 5 CLI (package tesseract-ocr, installed here when missing), page
//   segmentation mode 3, pinned to one thread (OMP_THREAD_LIMIT=1), plain text on stdout;
// - library: the built @pixport/ocr-tesseract extractor in a child process, one warm worker;
// - http: the prebuilt server (built packages) answering extract-formatted-text for the uploaded PNG;
// each of the two with the extractor's engines: wasm (tesseract.js) and native (the
// same tesseract executable as the cli row, as resident processes fed the pre-processed pages).
// All of them are started and warmed up first; then each page is read by every engine in turn, the
// order rotating from page to page, so the ratios compare calls seconds apart.
// Prints each engine's mean and worst plain-text character error rate against the source, its
// median time per page and the ratio to the CLI's, and its peak RSS: for pixport's rows, the sum
// over the process and its child processes (the native engine's tesseract), sampled every 10 ms,
// beside the process's own peak (the kernel's high-water mark, VmHWM, which the sum is never
// below); the library's markdown CER too, and how long the library held its process's event loop
// (the pre-processing and layout run on the caller's thread).
// Targets: pixport's CER <= the CLI's, time <= 1.0x the CLI's, peak RSS <= 200 MB.
// Usage: npx --yes pnpm@12 run build && npx tsx --conditions=pixport-source bench/ocr.mjs [--only name]
//   [--engines wasm,native] [--library-env '{"MALLOC_MMAP_THRESHOLD_":"131072"}']
//   [--http-env '{"PIXPORT_ALLOCATOR":"system"}']
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { OCR_DOCUMENT_SUITE } from "../packages/testing/src/fixtures/document-suite.ts";
import { characterErrorRate, renderDocument } from "../packages/testing/src/fixtures/documents.ts";
import { ensureTesseractCli, sampleTree, startChild, statusBytes } from "./lib.mjs";

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    engines: { type: "string", default: "wasm,native" },
    "library-env": { type: "string" },
    "http-env": { type: "string" },
  },
});
const engines = values.engines.split(",");
const here = path.dirname(new URL(import.meta.url).pathname);

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MB`;

ensureTesseractCli();
const directory = await mkdtemp(path.join(tmpdir(), "pixport-ocr-bench-"));
const pages = [];
for (const entry of OCR_DOCUMENT_SUITE) {
  if (values.only !== undefined && !entry.spec.name.includes(values.only)) continue;
  for (const scale of entry.scales) {
    const document = await renderDocument(entry.spec, { format: "png", scale, photo: entry.photo });
    const file = `${entry.spec.name}@${document.width}.png`;
    await writeFile(path.join(directory, file), document.data);
    pages.push({ file, document });
  }
}
pages.sort((a, b) => (a.file < b.file ? -1 : 1));
console.log(`${pages.length} pages in ${directory}`);

// Every engine is started first and warmed up; then the pages are read one at a time, each page by
// every engine in turn (the order rotating from page to page), so that the ratios compare runs
// seconds apart: these shared machines drift by 5-10 % between minutes, more than the differences
// measured (each engine reading all the pages in turn would compare runs minutes apart).

/** Debian's CLI, one process per page, timed by /usr/bin/time (wall seconds and peak RSS in KB). */
function cliEngine() {
  const rows = [];
  return {
    name: "cli",
    rows,
    async read({ file, document }) {
      const run = spawnSync(
        "/usr/bin/time",
        ["-f", "%e %M", "tesseract", path.join(directory, file), "-", "--psm", "3"],
        { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, encoding: "utf8" },
      );
      const [seconds, kilobytes] = run.stderr.trim().split("\n").at(-1).split(" ").map(Number);
      rows.push({
        file,
        ms: seconds * 1000,
        rss: kilobytes * 1024,
        cer: characterErrorRate(run.stdout, document.plain),
      });
    },
    async finish() {
      return { treePeak: Math.max(...rows.map((row) => row.rss)) };
    },
  };
}

/** The library in its own process (bench/ocr-child.mjs), one page per request on its stdin. */
async function libraryEngine(engine, env) {
  const rows = [];
  const child = spawn(process.execPath, [path.join(here, "ocr-child.mjs"), directory, engine], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ...env },
  });
  const stop = sampleTree(child.pid);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const lines = [];
  const waiting = [];
  let buffered = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    const parts = buffered.split("\n");
    buffered = parts.pop();
    for (const line of parts) {
      const next = waiting.shift();
      if (next === undefined) lines.push(JSON.parse(line));
      else next(JSON.parse(line));
    }
  });
  const nextLine = () =>
    lines.length > 0
      ? Promise.resolve(lines.shift())
      : Promise.race([
          new Promise((resolve) => waiting.push(resolve)),
          exited.then((code) => Promise.reject(new Error(`ocr-child exited ${code}`))),
        ]);
  await nextLine(); // {"ready":true}: warmed up
  return {
    name: env === undefined ? `library ${engine}` : `library ${engine}+env`,
    rows,
    async read({ file, document }) {
      child.stdin.write(`${file}\n`);
      const row = await nextLine();
      rows.push({
        file,
        ms: row.plainMs,
        cer: characterErrorRate(row.plain, document.plain),
        markdownCer: characterErrorRate(row.markdown, document.markdown),
      });
    },
    async finish() {
      child.stdin.end();
      const last = await nextLine();
      await exited;
      const treePeak = stop();
      return {
        ownPeak: last.peakRss,
        treePeak: Math.max(treePeak, last.peakRss),
        loop: { p99: last.loopP99, longest: last.loopLongest },
      };
    },
  };
}

/** The prebuilt server, one request at a time: the page uploaded, then extract-formatted-text timed. */
async function httpEngine(engine, env) {
  const rows = [];
  const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-ocr-bench-server-"));
  const server = await startChild(path.join(here, "pixport-child.mjs"), [dataDir], {
    ...env,
    PIXPORT_BENCH_OCR_ENGINE: engine,
  });
  const malloc = /MALLOC (\S+)/.exec(server.output())?.[1];
  const stop = sampleTree(server.child.pid);
  const key = /KEY (\S+)/.exec(server.output())[1];
  const upload = async (file) => {
    const form = new FormData();
    form.append("name", file);
    form.append("image", new Blob([await readFile(path.join(directory, file))]), file);
    const uploaded = await fetch(`${server.url}/v1/images`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    const body = await uploaded.json();
    if (uploaded.status !== 201)
      throw new Error(`upload answered ${uploaded.status}: ${JSON.stringify(body)}`);
    return body.id;
  };
  const extract = async (id) => {
    const response = await fetch(`${server.url}/v1/images/${id}/extract-formatted-text`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ format: "plain" }),
    });
    if (response.status !== 201)
      throw new Error(`extract answered ${response.status}: ${await response.text()}`);
    return (await response.json()).content;
  };
  await extract(await upload(pages[0].file)); // warm-up: the worker starts on the first call
  return {
    name: `http ${engine}${env === undefined ? "" : "+env"}`,
    malloc,
    rows,
    async read({ file, document }) {
      const id = await upload(file);
      const start = performance.now();
      const content = await extract(id);
      rows.push({ file, ms: performance.now() - start, cer: characterErrorRate(content, document.plain) });
    },
    async finish() {
      // The kernel's high-water mark (VmHWM; the launcher execs node, so the child's pid is the
      // server's). The server's own RSS samples every 20 ms miss short peaks by 10-20 MB; VmHWM is
      // never below them.
      const ownPeak = statusBytes(server.child.pid, "VmHWM");
      const treePeak = Math.max(stop(), ownPeak);
      server.child.kill("SIGTERM");
      await new Promise((resolve) => server.child.once("exit", resolve));
      await rm(dataDir, { recursive: true, force: true });
      return { ownPeak, treePeak };
    },
  };
}

const participants = [cliEngine()];
// --library-env '{"NAME":"value"}': one more library row per engine, its process (and the native
// engine's tesseract processes) started with those variables, e.g. glibc's malloc settings.
// --http-env '{"NAME":"value"}': the same for one more http row per engine (the server's process,
// started through the launcher as `pnpm start` does, e.g. PIXPORT_ALLOCATOR=system).
const libraryEnv = values["library-env"] === undefined ? undefined : JSON.parse(values["library-env"]);
const httpEnv = values["http-env"] === undefined ? undefined : JSON.parse(values["http-env"]);
for (const engine of engines) {
  participants.push(await libraryEngine(engine), await httpEngine(engine));
  if (libraryEnv !== undefined) participants.push(await libraryEngine(engine, libraryEnv));
  if (httpEnv !== undefined) participants.push(await httpEngine(engine, httpEnv));
}
for (const [index, page] of pages.entries()) {
  for (let turn = 0; turn < participants.length; turn++) {
    await participants[(index + turn) % participants.length].read(page);
  }
}
const results = [];
for (const participant of participants) {
  results.push({
    name: participant.name,
    rows: participant.rows,
    malloc: participant.malloc,
    ...(await participant.finish()),
  });
}
await rm(directory, { recursive: true, force: true });
const cli = results[0].rows;

const cliMedian = median(cli.map((row) => row.ms));
const report = (name, rows, treePeak, ownPeak, malloc) => {
  const rates = rows.map((row) => row.cer);
  const time = median(rows.map((row) => row.ms));
  console.log(
    `${name.padEnd(19)} plain CER mean ${mean(rates).toFixed(4)} worst ${Math.max(...rates).toFixed(4)}  ` +
      `median ${time.toFixed(0)} ms/page (${(time / cliMedian).toFixed(2)}x cli)  peak RSS ${mb(treePeak)}` +
      (ownPeak === undefined ? "" : ` (process alone ${mb(ownPeak)})`) +
      (malloc === undefined ? "" : ` malloc ${malloc}`),
  );
};
console.log(
  "engine          accuracy (plain text vs source)              time                        memory",
);
for (const result of results)
  report(result.name, result.rows, result.treePeak, result.ownPeak, result.malloc);
for (const result of results.filter((entry) => entry.name.startsWith("library"))) {
  const markdown = result.rows.map((row) => row.markdownCer);
  console.log(
    `${result.name} markdown CER mean ${mean(markdown).toFixed(4)} worst ${Math.max(...markdown).toFixed(4)} (the CLI has no markdown)`,
  );
  console.log(
    `${result.name} held its event loop: p99 ${result.loop.p99.toFixed(1)} ms, longest ${result.loop.longest.toFixed(0)} ms (a 5 ms interval's lateness while it read the pages)`,
  );
}
const worst = [...cli].sort((a, b) => b.cer - a.cer).slice(0, 5);
console.log(`cli's worst pages: ${worst.map((row) => `${row.file} ${row.cer.toFixed(3)}`).join(", ")}`);
