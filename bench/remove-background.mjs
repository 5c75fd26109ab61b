// Times the background removers on generated product shots (a disc on a light gradient) of 1, 4
// and 12 megapixels, next to the reference of the same run: sharp decoding the JPEG and encoding
// a PNG of the same size (the floor of any remover that answers a PNG). Prints ms per image and
// per megapixel. The contract wants an answer within 10 s.
// - sharp: the embedded classical remover (@pixport/background-sharp);
// - onnx: @pixport/background-onnx with --model <file.onnx> --family isnet|u2net|birefnet, or by
//   default the IS-Net model reassembled from the test-only @imgly/background-removal-data
//   (AGPL; used here for measurement, never shipped).
// Usage: node bench/remove-background.mjs [--sizes 1000x1000,2400x1600,4000x3000] [--runs 3]
//        [--engines sharp,onnx] [--model file.onnx] [--family isnet] [--threads N]
// Run `pnpm build` first (the removers are imported from their dist).
import { parseArgs } from "node:util";
import { createOnnxBackgroundRemover } from "@pixport/background-onnx";
import { createSharpBackgroundRemover } from "@pixport/background-sharp";
import sharp from "sharp";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000x1000,2400x1600,4000x3000" },
    runs: { type: "string", default: "3" },
    engines: { type: "string", default: "sharp,onnx" },
    model: { type: "string" },
    family: { type: "string", default: "isnet" },
    threads: { type: "string" },
  },
});
const sizes = values.sizes.split(",").map((size) => size.split("x").map(Number));
const runs = Number(values.runs);

async function productShot(width, height) {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const shade = 215 + Math.round((y / height) * 35);
    for (let x = 0; x < width; x++) {
      const inside = (x - width / 2) ** 2 + (y - height / 2) ** 2 < (height * 0.3) ** 2;
      raw.set(inside ? [200, 30, 40] : [shade, shade, 250], (y * width + x) * 3);
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function median(fn) {
  const times = [];
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

const engines = values.engines.split(",");
const removers = [];
if (engines.includes("sharp")) removers.push(["sharp", createSharpBackgroundRemover()]);
if (engines.includes("onnx")) {
  let model = values.model;
  if (model === undefined) {
    const { imglyIsnetModelPath } = await import("../adapters/background-onnx/scripts/imgly-isnet.mjs");
    model = imglyIsnetModelPath("medium");
  }
  const rssBefore = process.memoryUsage().rss;
  const remover = await createOnnxBackgroundRemover({
    model,
    family: values.family,
    ...(values.threads === undefined ? {} : { threads: Number(values.threads) }),
  });
  removers.push([`onnx-${values.family}`, remover]);
  const probe = new Uint8Array(await productShot(1000, 1000));
  await remover.remove({ image: probe, width: 1000, height: 1000 });
  const megabytes = (bytes) => (bytes / 2 ** 20).toFixed(0);
  console.log(
    `onnx model ${model}: input ${remover.settings.inputWidth}x${remover.settings.inputHeight}; process RSS +${megabytes(process.memoryUsage().rss - rssBefore)} MB with the session loaded after one inference, peak RSS of the process ${megabytes(process.resourceUsage().maxRSS * 1024)} MB`,
  );
}
console.log("engine        size         MP    remover ms  ms/MP   reference (decode+PNG) ms  x reference");
for (const [width, height] of sizes) {
  const image = new Uint8Array(await productShot(width, height));
  const megapixels = (width * height) / 1e6;
  const referenceMs = await median(() => sharp(image).ensureAlpha().png({ compressionLevel: 6 }).toBuffer());
  for (const [name, remover] of removers) {
    // One warm-up call (model sessions allocate their buffers on the first run).
    await remover.remove({ image, width, height });
    const removerMs = await median(() => remover.remove({ image, width, height }));
    console.log(
      `${name.padEnd(13)} ${`${width}x${height}`.padEnd(12)} ${megapixels.toFixed(1).padStart(4)}  ${removerMs.toFixed(0).padStart(10)}  ${(removerMs / megapixels).toFixed(0).padStart(5)}   ${referenceMs.toFixed(0).padStart(25)}  ${(removerMs / referenceMs).toFixed(1).padStart(11)}`,
    );
  }
}
for (const [, remover] of removers) await remover.close?.();
