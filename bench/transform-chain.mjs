// Chains of 5 steps on the prebuilt server: one fused POST /v1/images/{id}/transform against the
// same 5 steps as 5 single operations (each decodes, encodes and stores an image), alternating in
// one run. Prints the median time of each, the ratio (target: fused at least 3x faster) and the
// PSNR between the two final images.
// Usage: node bench/transform-chain.mjs [--rounds 15]
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import sharp from "sharp";
import { fixture, startChild } from "./lib.mjs";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "15" } } });
const rounds = Number(values.rounds);
const here = path.dirname(fileURLToPath(import.meta.url));

// Two chains: the example (its cost is dominated by the WebP encode, about 275 ms for a
// 1920x1280 image on sharp, and by modulate, which every path pays once) and a chain of light
// steps, where the decodes, encodes and stores that fusing saves are most of the cost.
const CHAINS = {
  example: [
    { op: "resize", width: 1600 },
    { op: "rotate", angle: 90 },
    { op: "modulate", brightness: 10, saturation: -20 },
    { op: "blur", sigma: 2 },
    { op: "convert", format: "webp", quality: 80 },
  ],
  light: [
    { op: "resize", width: 1600 },
    { op: "rotate", angle: 90 },
    { op: "mirror", mode: "horizontal" },
    { op: "crop", x1: 100, y1: 100, x2: 900, y2: 1300 },
    { op: "convert", format: "jpeg", quality: 80 },
  ],
};
const PATHS = {
  resize: "resize",
  rotate: "rotate",
  modulate: "modulate",
  blur: "blur",
  convert: "convert",
  mirror: "mirror",
  crop: "crop",
};

const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-bench-chain-"));
const server = await startChild(path.join(here, "pixport-child.mjs"), [dataDir]);
try {
  const key = /KEY (\S+)/.exec(server.output())[1];
  const post = async (url, init) => {
    const response = await fetch(`${server.url}${url}`, {
      method: "POST",
      ...init,
      headers: { "x-api-key": key, ...(init?.headers ?? {}) },
    });
    const body = await response.json();
    if (response.status !== 201) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`);
    return body;
  };
  const json = (body) => ({ headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const form = new FormData();
  form.append("name", "chain");
  form.append("image", new Blob([await fixture()]), "chain.jpg");
  const source = await post("/v1/images/upload", { body: form });

  for (const [chainName, STEPS] of Object.entries(CHAINS)) {
    const fusedRun = () => post(`/v1/images/${source.id}/transform`, json({ steps: STEPS }));
    const singleRun = async () => {
      let id = source.id;
      for (const { op, ...body } of STEPS) id = (await post(`/v1/images/${id}/${PATHS[op]}`, json(body))).id;
      return { id };
    };
    const timed = async (run) => {
      const started = performance.now();
      const image = await run();
      return { ms: performance.now() - started, id: image.id };
    };
    await fusedRun();
    await singleRun();
    const fused = [];
    const single = [];
    let lastFused;
    let lastSingle;
    for (let round = 0; round < rounds; round++) {
      const a = await timed(fusedRun);
      const b = await timed(singleRun);
      fused.push(a.ms);
      single.push(b.ms);
      lastFused = a.id;
      lastSingle = b.id;
    }
    const median = (list) => [...list].sort((x, y) => x - y)[Math.floor(list.length / 2)];
    const download = async (id) => {
      const response = await fetch(`${server.url}/v1/images/${id}/download`, {
        headers: { "x-api-key": key },
      });
      return sharp(Buffer.from(await response.arrayBuffer()))
        .removeAlpha()
        .raw()
        .toBuffer();
    };
    // The reference: the same steps fused, encoded losslessly (PNG), so it holds only the steps'
    // own rounding; the fused result then differs from it by one lossy encode, the chained one by
    // one per step.
    const lossless = STEPS.map((step) => (step.op === "convert" ? { op: "convert", format: "png" } : step));
    const reference = await post(`/v1/images/${source.id}/transform`, json({ steps: lossless }));
    const [a, b, r] = await Promise.all([download(lastFused), download(lastSingle), download(reference.id)]);
    const psnrOf = (x, y) => {
      let squared = 0;
      for (let index = 0; index < x.length; index++) squared += (x[index] - y[index]) ** 2;
      return 10 * Math.log10((255 * 255) / (squared / x.length));
    };
    const psnr = psnrOf(a, b);
    console.log(`${chainName}: 1920x1280 JPEG, ${STEPS.map((step) => step.op).join(", ")}; ${rounds} rounds`);
    console.log(`  fused transform:      median ${median(fused).toFixed(1)} ms`);
    console.log(`  5 single operations:  median ${median(single).toFixed(1)} ms`);
    console.log(`  speed-up: ${(median(single) / median(fused)).toFixed(2)}x (target >= 3)`);
    console.log(`  PSNR fused vs chained: ${psnr.toFixed(1)} dB`);
    console.log(
      `  PSNR against the lossless reference: fused ${psnrOf(a, r).toFixed(1)} dB, chained ${psnrOf(b, r).toFixed(1)} dB`,
    );
  }
} finally {
  server.child.kill("SIGTERM");
  await rm(dataDir, { recursive: true, force: true });
}
