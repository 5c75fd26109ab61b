"use strict";
// The ONNX session of @pixport/background-onnx, in a child process of its own (forked with an IPC
// channel, structured-clone serialisation). Why a process and not a worker thread:
// - onnxruntime-node's run() holds its thread for the whole inference (about a second for
//   IS-Net), and an inference cannot be interrupted; killing a process stops it for real, where
//   terminating a worker thread inside onnxruntime aborts the whole host process.
// - Memory: the process is started with glibc's malloc asking for transparent huge pages
//   (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, set by the owner), which lets onnxruntime run without
//   its memory arena at the arena's speed (measured on IS-Net at 1024 x 1024, 2 threads: 1.3 s per
//   inference and a 0.94 GB peak, against 1.5 s and 1.13 GB with the arena, and 3.0 s without
//   either); the activations (about 0.7 GB) leave the host's heap alone; and the graph optimiser's
//   garbage stays in a short-lived process (below).
//
// Two roles, chosen by the first message:
// - { type: "prepare", model (path or bytes), target, sessionOptions }: reads the model, widens
//   float16 tensors to float32 (float16-widening.cjs), lets onnxruntime optimise the graph at the
//   highest level and write the result to `target`, answers { type: "prepared", widened, peakRss }
//   and exits. The optimised model is specific to this machine's CPU: it is made at start, in a
//   private temporary directory, never shipped.
// - { type: "load", model (path), sessionOptions }: loads the prepared model (optimisation off: it
//   is already done), answers { type: "ready", inputNames, outputNames, inputs: [{ name, isTensor,
//   type, shape }] } or { type: "failed", message }, then serves jobs { id, rgb: Uint8Array
//   (interleaved RGB of the model's input size), settings } with { id, mask: Uint8Array (0..255),
//   width, height } or { id, error: { code, message } }.
// The process exits when its owner goes away (the IPC channel closes).

const { readFileSync } = require("node:fs");
const { widenFloat16 } = require("./float16-widening.cjs");

process.on("disconnect", () => process.exit(0));

let ort;

/** Interleaved RGB bytes to the normalised float32 input tensor (NCHW or NHWC). */
function toInputTensor(rgb, settings) {
  const { inputWidth: width, inputHeight: height, mean, std, layout } = settings;
  const plane = width * height;
  const data = new Float32Array(plane * 3);
  for (let channel = 0; channel < 3; channel += 1) {
    const scale = 1 / (255 * std[channel]);
    const offset = mean[channel] / std[channel];
    if (layout === "nchw") {
      const base = channel * plane;
      for (let pixel = 0; pixel < plane; pixel += 1)
        data[base + pixel] = rgb[pixel * 3 + channel] * scale - offset;
    } else {
      for (let index = channel; index < plane * 3; index += 3) data[index] = rgb[index] * scale - offset;
    }
  }
  const dims = layout === "nchw" ? [1, 3, height, width] : [1, height, width, 3];
  return new ort.Tensor("float32", data, dims);
}

class JobError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The output map to 0..255 alpha bytes of the map's own size. */
function toMask(output, settings) {
  // Accept [1, 1, H, W], [1, H, W, 1], [1, H, W] and [H, W]: exactly two dimensions above 1.
  const spatial = output.dims.filter((dim) => dim !== 1);
  if (output.type !== "float32" || spatial.length !== 2) {
    throw new JobError(
      "MODEL_BAD_RESPONSE",
      `The model's output "${settings.outputName}" is ${output.type} [${output.dims.join(", ")}]; a float32 one-channel map was expected.`,
    );
  }
  const [height, width] = spatial;
  const values = output.data;
  const count = width * height;
  const logits = settings.output === "logits";
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  const probabilities = new Float32Array(count);
  for (let index = 0; index < count; index += 1) {
    let value = values[index];
    if (logits) value = 1 / (1 + Math.exp(-value));
    if (Number.isNaN(value)) value = 0;
    probabilities[index] = value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  // A flat map has no subject to stretch: keep it as it is rather than amplify noise.
  const stretch = settings.normalize === "minmax" && max - min > 1e-6;
  const clip = settings.alphaClip;
  const mask = new Uint8Array(count);
  for (let index = 0; index < count; index += 1) {
    const value = stretch ? (probabilities[index] - min) / (max - min) : probabilities[index];
    mask[index] = Math.round(Math.min(1, Math.max(0, (value - clip) / (1 - 2 * clip))) * 255);
  }
  return { mask, width, height };
}

function send(message) {
  process.send(message);
}

async function prepare({ runtimePath, model, target, sessionOptions }) {
  try {
    ort = require(runtimePath);
    const bytes = typeof model === "string" ? readFileSync(model) : model;
    const { model: widened, widened: changed } = widenFloat16(bytes);
    const session = await ort.InferenceSession.create(widened, {
      ...sessionOptions,
      graphOptimizationLevel: "all",
      optimizedModelFilePath: target,
    });
    await session.release?.();
    send({ type: "prepared", widened: changed, peakRss: process.resourceUsage().maxRSS * 1024 });
  } catch (error) {
    send({ type: "failed", message: String(error?.message ?? error) });
  }
  process.disconnect();
}

async function load({ runtimePath, model, sessionOptions }) {
  let session;
  try {
    ort = require(runtimePath);
    session = await ort.InferenceSession.create(model, sessionOptions);
  } catch (error) {
    send({ type: "failed", message: String(error?.message ?? error) });
    return;
  }
  send({
    type: "ready",
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    inputs: session.inputMetadata.map((meta) => ({
      name: meta.name,
      isTensor: meta.isTensor,
      type: meta.isTensor ? meta.type : undefined,
      shape: meta.isTensor ? [...meta.shape] : [],
    })),
  });
  process.on("message", async ({ id, rgb, settings }) => {
    try {
      const input = toInputTensor(rgb, settings);
      let outputs;
      try {
        outputs = await session.run({ [settings.inputName]: input }, [settings.outputName]);
      } catch (error) {
        throw new JobError("MODEL_BAD_RESPONSE", `The segmentation model failed: ${error?.message ?? error}`);
      }
      const output = outputs[settings.outputName];
      if (output === undefined)
        throw new JobError("MODEL_BAD_RESPONSE", `The model returned no "${settings.outputName}".`);
      const result = toMask(output, settings);
      output.dispose?.();
      send({ id, ...result });
    } catch (error) {
      send({
        id,
        error: {
          code: error instanceof JobError ? error.code : "INTERNAL",
          message: String(error?.message ?? error),
        },
      });
    }
  });
}

process.once("message", (message) => {
  if (message.type === "prepare") prepare(message);
  else load(message);
});
