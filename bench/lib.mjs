// Shared by the benchmarks: the generated fixture, a server child process, and the RSS of a process
// tree sampled over time.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * A photo-like 1920x1280 JPEG (gradients + noise), generated so nothing is downloaded; another
 * `seed` gives other noise and a shifted blue gradient (bench/delivery.mjs's rotating sources).
 */
export async function fixture({ seed: start = 7, quality = 90 } = {}) {
  // Imported here, not at the top: child servers import this file for reportPeakRss, and the IPX
  // child must not load a second sharp (IPX brings its own).
  const { default: sharp } = await import("sharp");
  const width = 1920;
  const height = 1280;
  const raw = Buffer.alloc(width * height * 3);
  let seed = start;
  const shift = (start - 7) * 37;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 32;
      const offset = (y * width + x) * 3;
      raw[offset] = ((x * 255) / width + noise) & 255;
      raw[offset + 1] = ((y * 255) / height + noise) & 255;
      raw[offset + 2] = (((x + y) * 255) / (width + height) + shift) & 255;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality })
    .toBuffer();
}

/**
 * `count` distinct photo-like 1920x1280 JPEGs (q85), made once and kept in the system's temporary
 * directory: crops, flips and hue shifts of examples/assets/cat.jpg (960x640, enlarged) under film
 * grain, and gradient-and-noise pictures from other seeds, alternating (bench/delivery.mjs's
 * rotating sources, bench/origin.mjs's origin images). Each is `{ name, bytes }`.
 */
export async function photoSources(count) {
  const cache = path.join(tmpdir(), "pixport-bench-delivery-sources-v1");
  await mkdir(cache, { recursive: true });
  const { default: sharp } = await import("sharp");
  const cat = fileURLToPath(new URL("../examples/assets/cat.jpg", import.meta.url));
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

/**
 * Starts a child server script and resolves with its URL once it prints "listening on". The pixport
 * servers of the benchmarks (scripts named pixport-*.mjs; `launcher` overrides) start as `pnpm start`
 * starts the prebuilt server: through packages/server/bin/with-allocator, which preloads tcmalloc
 * when the system has it (PIXPORT_ALLOCATOR in `env` chooses, e.g. "system" for glibc's malloc).
 * The reference servers (raw sharp, IPX, static files) run on plain node.
 */
export function startChild(
  script,
  args,
  env = {},
  nodeArgs = [],
  { stderr = "inherit", launcher = /\/pixport-[^/]*\.mjs$/.test(script) } = {},
) {
  const command = [process.execPath, ...nodeArgs, script, ...args];
  if (launcher)
    command.unshift("sh", new URL("../packages/server/bin/with-allocator", import.meta.url).pathname);
  const child = spawn(command[0], command.slice(1), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", stderr, "ipc"],
  });
  return new Promise((resolve, reject) => {
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ child, url: match[1], output: () => output });
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${output}`)));
  });
}

/**
 * Answers a parent's "peak-rss" message with this process's peak RSS: the kernel's high-water mark
 * (VmHWM), which no peak escapes, where /proc has it; else the largest of samples every 20 ms
 * (the benchmark child servers call it first thing), with the samples' peak beside it
 * (`sampledPeakRss`). The samples alone miss an OCR server's short peaks by 10-20 MB; under the
 * steady loads of bench/resize-throughput.mjs and bench/delivery.mjs the two agree to the MB.
 * A "cpu-usage" message is answered with the process's CPU time so far (`cpuMicros`, every thread).
 */
export function reportPeakRss() {
  let peakRss = 0;
  setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 20).unref();
  process.on("message", (message) => {
    if (message === "peak-rss") {
      const sampled = Math.max(peakRss, process.memoryUsage.rss());
      process.send({ peakRss: Math.max(sampled, statusBytes("self", "VmHWM")), sampledPeakRss: sampled });
    }
    if (message === "cpu-usage") {
      const { user, system } = process.cpuUsage();
      process.send({ cpuMicros: user + system });
    }
  });
}

/** Uploads `bytes` to a pixport child (its key from the child's output): the key and the image id. */
export async function uploadTo(server, bytes, fileName = "bench.jpg") {
  const key = /KEY (\S+)/.exec(server.output())[1];
  const form = new FormData();
  form.append("name", "bench");
  form.append("image", new Blob([bytes]), fileName);
  const response = await fetch(`${server.url}/v1/images/upload`, {
    method: "POST",
    headers: { "x-api-key": key },
    body: form,
  });
  return { key, id: (await response.json()).id };
}

/** The pids of a process's descendants, children first (Linux /proc); none once it is gone. */
export function descendants(pid) {
  const found = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim();
      for (const child of children === "" ? [] : children.split(" ").map(Number)) {
        found.push(child, ...descendants(child));
      }
    }
  } catch {
    // gone between two reads
  }
  return found;
}

/** A `/proc/<pid>/status` field in bytes (VmRSS, VmHWM); 0 once the process is gone. */
export function statusBytes(pid, field) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** RSS of a process and all its descendants, bytes (Linux /proc); 0 once it is gone. */
export function treeRss(pid) {
  return [pid, ...descendants(pid)].reduce((total, each) => total + statusBytes(each, "VmRSS"), 0);
}

/** Samples the tree RSS of `pid` every 10 ms until stopped; answers the largest sample. */
export function sampleTree(pid) {
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRss(pid));
  }, 10);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

/** Installs Debian's tesseract CLI (tesseract-ocr, apt-get) when `tesseract` does not run. */
export function ensureTesseractCli() {
  if (spawnSync("tesseract", ["--version"]).status === 0) return;
  console.log("installing Debian's tesseract-ocr (apt-get) ...");
  execFileSync("sh", ["-c", "apt-get update -qq && apt-get install -y -qq tesseract-ocr tesseract-ocr-eng"], {
    stdio: "inherit",
  });
}
