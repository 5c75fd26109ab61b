// Background removal at the model's own speed, side by side in one run:
// - bare: onnxruntime-node's session.run on a ready input tensor of the same image, the model as
//   shipped (float16 weights), arena on, optimisation "all" (the adapter's former options);
// - bare-prepared: the floor of the adapter's own way, in the same kind of process: the model
//   widened to float32 and optimised beforehand in another process, loaded with optimisation off,
//   arena off, malloc asking for huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1);
// - bare-default: onnxruntime's own defaults (arena and memory pattern on), for reference;
// - library: @pixport/background-onnx's remove() (decode, resize, tensor, inference in its child
//   process, mask back to full size, PNG);
// - http: the same engine behind the prebuilt server (upload once, then remove-background);
// - imgly: IMG.LY's @imgly/background-removal-node (AGPL, a benchmark peer in bench/peers) on the same
//   model, installed with the workspace's sharp and onnxruntime-node (pnpm overrides: its own
//   pins would download libvips at install);
// - embedded: the default remover (@pixport/background-sharp) as a library.
// Each engine runs in its own process, so each peak RSS is its own; for the library and the server
// it is the sum of the host's peak and its inference process's (VmHWM), both also printed, and
// beside them "at once": the largest sum of the two sampled at the same moment (every 10 ms, from
// the first call on), the memory the call needs at once; the sum of the two peaks bounds it. The
// model is the IS-Net that the test-only @imgly/background-removal-data ships (fp16 weights,
// "medium"), or --model. Prints median ms per image at 1024x1024 and 2048x1536, the ratios
// library/bare-prepared and http/library (targets: 1.10 and 1.15), and peak RSS (target for the
// library at 1024x1024: under 1.0 GB).
// Usage: npx --yes pnpm@12 run build && node bench/background.mjs [--runs 5] [--model file.onnx]
//        [--engines library,http] [--rounds 3]
// --rounds N runs every engine N times over, alternating, and prints the ratios of each round and
// their median: the machine's speed drifts by more than the adapter's overhead between minutes.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { descendants, sampleTree, startChild, statusBytes } from "./lib.mjs";
import { importPeer, resolvePeer } from "./peers/index.mjs";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "5" },
    rounds: { type: "string", default: "1" },
    model: { type: "string" },
    child: { type: "string" },
    size: { type: "string" },
    prepared: { type: "string" },
    engines: { type: "string" },
  },
});
const runs = Number(values.runs);
const rounds = Number(values.rounds);
const here = path.dirname(new URL(import.meta.url).pathname);
const SIZES = [
  [1024, 1024],
  [2048, 1536],
];

/** A product shot: a red disc on a light vertical gradient, JPEG. */
async function productShot(width, height) {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const shade = 215 + Math.round((y / height) * 35);
    for (let x = 0; x < width; x++) {
      const inside = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (height * 0.3) ** 2;
      raw.set(inside ? [200, 30, 40] : [shade, shade, 250], (y * width + x) * 3);
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
}

async function medianOf(fn) {
  // A child tells its parent where the calls start: the parent samples its process tree from here.
  if (values.child !== undefined) console.log(JSON.stringify({ phase: "calls" }));
  await fn(); // warm-up
  const times = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

async function modelPath() {
  if (values.model !== undefined) return values.model;
  const { imglyIsnetModelPath } = await import("../adapters/background-onnx/scripts/imgly-isnet.mjs");
  return imglyIsnetModelPath("medium");
}

/** The summed peak RSS (VmHWM) of the running descendants of a process (its inference processes). */
function descendantsPeakRss(root) {
  return descendants(root).reduce((total, pid) => total + statusBytes(pid, "VmHWM"), 0);
}

/** Child mode: one engine, prints one JSON line per size and one with its peak RSS. */
async function child(engine) {
  const model = await modelPath();
  const [width, height] = values.size.split("x").map(Number);
  const image = engine === "prepare" ? undefined : await productShot(width, height);
  const report = (ms) => {
    // VmHWM, not getrusage's maxRSS, which Linux carries over from the bench parent across exec.
    const hostRss = statusBytes("self", "VmHWM");
    const modelRss = descendantsPeakRss(process.pid);
    console.log(
      JSON.stringify({ engine, size: values.size, ms, peakRss: hostRss + modelRss, hostRss, modelRss }),
    );
  };
  if (engine === "prepare") {
    // Writes the model bare-prepared loads: widened, then optimised by onnxruntime ("all").
    const require = createRequire(path.join(here, "../adapters/background-onnx/package.json"));
    const ort = require("onnxruntime-node");
    const { widenFloat16 } = require("./src/float16-widening.cjs");
    const widened = widenFloat16(readFileSync(model)).model;
    await ort.InferenceSession.create(widened, {
      graphOptimizationLevel: "all",
      optimizedModelFilePath: values.prepared,
      logSeverityLevel: 3,
    });
    console.log(JSON.stringify({ engine, ms: 0, peakRss: 0 }));
    return;
  }
  if (engine.startsWith("bare")) {
    const require = createRequire(path.join(here, "../adapters/background-onnx/package.json"));
    const ort = require("onnxruntime-node");
    const threads = Math.max(1, Math.min(4, availableParallelism()));
    const options = {
      bare: {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionProviders: ["cpu"],
        graphOptimizationLevel: "all",
        enableCpuMemArena: true,
        enableMemPattern: false,
      },
      "bare-prepared": {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        executionProviders: ["cpu"],
        graphOptimizationLevel: "disabled",
        enableCpuMemArena: false,
        enableMemPattern: false,
      },
      "bare-default": {},
    }[engine];
    const session = await ort.InferenceSession.create(
      engine === "bare-prepared" ? values.prepared : model,
      options,
    );
    // The same input the adapter feeds: the image stretched to 1024 x 1024, IS-Net's normalisation.
    const rgb = await sharp(image)
      .resize(1024, 1024, { fit: "fill", kernel: "lanczos3" })
      .removeAlpha()
      .raw()
      .toBuffer();
    const plane = 1024 * 1024;
    const data = new Float32Array(plane * 3);
    for (let channel = 0; channel < 3; channel++)
      for (let pixel = 0; pixel < plane; pixel++)
        data[channel * plane + pixel] = rgb[pixel * 3 + channel] / 255 - 0.5;
    const input = new ort.Tensor("float32", data, [1, 3, 1024, 1024]);
    report(await medianOf(() => session.run({ [session.inputNames[0]]: input })));
    return;
  }
  if (engine === "imgly") {
    // IMG.LY's own Node package on the same IS-Net ("medium"), its own pre- and post-processing
    // and session options, on the onnxruntime-node and sharp versions the workspace uses
    // (bench/peers/package.json overrides).
    const { removeBackground } = await importPeer("@imgly/background-removal-node");
    // Its default publicPath is relative to the working directory: point it at its own files.
    const entry = resolvePeer("@imgly/background-removal-node");
    const publicPath = `file://${path.dirname(entry)}/`;
    const config = { model: "medium", output: { format: "image/png" }, publicPath };
    report(await medianOf(() => removeBackground(new Blob([image], { type: "image/jpeg" }), config)));
    return;
  }
  if (engine === "library") {
    const { createOnnxBackgroundRemover } = await import("@pixport/background-onnx");
    const remover = await createOnnxBackgroundRemover({ model, family: "isnet" });
    report(await medianOf(() => remover.remove({ image, width, height })));
    await remover.close();
    return;
  }
  if (engine === "embedded") {
    const { createSharpBackgroundRemover } = await import("@pixport/background-sharp");
    const remover = createSharpBackgroundRemover();
    report(await medianOf(() => remover.remove({ image, width, height })));
    return;
  }
  throw new Error(`unknown engine ${engine}`);
}

function runChild(engine, size, env = {}) {
  return new Promise((resolve, reject) => {
    const args = [
      new URL(import.meta.url).pathname,
      "--child",
      engine,
      "--size",
      size,
      "--runs",
      String(runs),
    ];
    if (values.model !== undefined) args.push("--model", values.model);
    if (values.prepared !== undefined) args.push("--prepared", values.prepared);
    const proc = spawn(process.execPath, args, {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...env },
    });
    let output = "";
    let stop;
    proc.stdout.on("data", (chunk) => {
      output += chunk;
      if (stop === undefined && output.includes('{"phase":"calls"}')) stop = sampleTree(proc.pid);
    });
    proc.once("exit", (code) => {
      const treePeak = stop?.();
      if (code !== 0) reject(new Error(`${engine} exited ${code}`));
      else resolve({ ...JSON.parse(output.trim().split("\n").at(-1)), treePeak });
    });
  });
}

async function overHttp(size) {
  const [width, height] = size.split("x").map(Number);
  const model = await modelPath();
  const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bg-bench-"));
  const server = await startChild(path.join(here, "pixport-child.mjs"), [dataDir], {
    PIXPORT_BENCH_BACKGROUND: JSON.stringify({ engine: "onnx", model, family: "isnet" }),
  });
  try {
    const key = /KEY (\S+)/.exec(server.output())[1];
    const form = new FormData();
    form.append("name", "shot");
    form.append("image", new Blob([await productShot(width, height)]), "shot.jpg");
    const uploaded = await (
      await fetch(`${server.url}/v1/images`, { method: "POST", headers: { "x-api-key": key }, body: form })
    ).json();
    const stop = sampleTree(server.child.pid);
    const ms = await medianOf(async () => {
      const response = await fetch(`${server.url}/v1/images/${uploaded.id}/remove-background`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: "{}",
      });
      if (response.status !== 201) throw new Error(`remove-background answered ${response.status}`);
      await response.arrayBuffer();
    });
    server.child.send("peak-rss");
    const { peakRss: hostRss } = await new Promise((resolve) => server.child.once("message", resolve));
    const modelRss = descendantsPeakRss(server.child.pid);
    return { engine: "http", size, ms, peakRss: hostRss + modelRss, hostRss, modelRss, treePeak: stop() };
  } finally {
    server.child.kill("SIGTERM");
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (values.child !== undefined) {
  await child(values.child);
} else {
  const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
  console.log(`median of ${runs} runs after a warm-up; each engine in its own process`);
  const preparedDir = await mkdtemp(path.join(tmpdir(), "pixport-bg-bench-model-"));
  values.prepared = path.join(preparedDir, "prepared.onnx");
  await runChild("prepare", "0x0");
  const hugePages = { GLIBC_TUNABLES: "glibc.malloc.hugetlb=1" };
  // --engines library,http runs only those (no ratios printed).
  const wanted = (engine) => values.engines === undefined || values.engines.split(",").includes(engine);
  try {
    const ratios = [];
    for (let round = 1; round <= rounds; round++) {
      for (const [width, height] of SIZES) {
        const size = `${width}x${height}`;
        const rows = {};
        for (const engine of ["bare", "bare-prepared", "bare-default", "imgly", "library", "embedded"])
          if (wanted(engine))
            rows[engine] = await runChild(engine, size, engine === "bare-prepared" ? hugePages : {});
        if (wanted("http")) rows.http = await overHttp(size);
        const label = rounds > 1 ? `round ${round} ` : "";
        for (const row of Object.values(rows)) {
          const split = row.modelRss
            ? ` (host ${mb(row.hostRss)} + model process ${mb(row.modelRss)}; at once ${mb(row.treePeak)})`
            : "";
          console.log(
            `${label}${size.padEnd(10)} ${row.engine.padEnd(13)} ${row.ms.toFixed(0).padStart(6)} ms   peak RSS ${mb(row.peakRss)}${split}`,
          );
        }
        for (const [name, over, under] of [
          ["library / bare-prepared", "library", "bare-prepared"],
          ["http / library", "http", "library"],
        ])
          if (rows[over] !== undefined && rows[under] !== undefined)
            ratios.push({ size, name, value: rows[over].ms / rows[under].ms });
        if (Object.keys(rows).length < 7) continue;
        console.log(
          `${size.padEnd(10)} library / bare-prepared ${(rows.library.ms / rows["bare-prepared"].ms).toFixed(2)} (target <= 1.10)   ` +
            `library / bare ${(rows.library.ms / rows.bare.ms).toFixed(2)}   ` +
            `http / library ${(rows.http.ms / rows.library.ms).toFixed(2)} (target <= 1.15)   ` +
            `bare-default / bare ${(rows["bare-default"].ms / rows.bare.ms).toFixed(2)}   ` +
            `library / imgly ${(rows.library.ms / rows.imgly.ms).toFixed(2)}`,
        );
      }
    }
    // Each ratio from one round (the two engines measured minutes apart at most), then their median.
    for (const [width, height] of SIZES)
      for (const name of ["library / bare-prepared", "http / library"]) {
        const size = `${width}x${height}`;
        const values = ratios
          .filter((ratio) => ratio.size === size && ratio.name === name)
          .map((r) => r.value);
        if (values.length === 0) continue;
        const median = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
        console.log(
          `${size.padEnd(10)} ${name} ${values.map((value) => value.toFixed(2)).join(", ")}  median ${median.toFixed(2)}` +
            ` (target <= ${name.startsWith("http") ? "1.15" : "1.10"})`,
        );
      }
  } finally {
    await rm(preparedDir, { recursive: true, force: true });
  }
}
