"use strict";
// The ONNX session of @pixport/background-onnx, in a worker thread: onnxruntime-node's run() holds
// the thread it is called on for the whole inference (about a second for IS-Net), so on the main
// thread it would stall every other request of the server. A worker also makes a deadline real:
// the owner terminates a worker whose inference overruns it.
//
// Protocol. workerData: { runtimePath, model (path or bytes), sessionOptions }. The worker posts
// { type: "ready", inputNames, outputNames, inputs: [{ name, isTensor, type, shape }] } or
// { type: "failed", message } once. Jobs: { id, rgb: Uint8Array (interleaved RGB of the model's
// input size), settings } answer { id, mask: Uint8Array (0..255), width, height } or
// { id, error: { code, message } }.

const { parentPort, workerData } = require("node:worker_threads");

const ort = require(workerData.runtimePath);

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

async function main() {
  let session;
  try {
    session = await ort.InferenceSession.create(workerData.model, workerData.sessionOptions);
  } catch (error) {
    parentPort.postMessage({ type: "failed", message: String(error?.message ?? error) });
    return;
  }
  parentPort.postMessage({
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
  parentPort.on("message", async ({ id, rgb, settings }) => {
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
      parentPort.postMessage({ id, ...result }, [result.mask.buffer]);
    } catch (error) {
      parentPort.postMessage({
        id,
        error: {
          code: error instanceof JobError ? error.code : "INTERNAL",
          message: String(error?.message ?? error),
        },
      });
    }
  });
}

main();
