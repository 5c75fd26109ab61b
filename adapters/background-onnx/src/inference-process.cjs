"use strict";
// The ONNX session of @pixport/background-onnx, in a child process of its own (forked with an IPC
// channel, structured-clone serialisation). Why a process and not a worker thread:
// - onnxruntime-node's run() holds its thread for the whole inference (about a second for
//   IS-Net), and an inference cannot be interrupted; killing a process stops it for real, where
//   terminating a worker thread inside onnxruntime aborts the whole host process.
// - Memory: the process is started with glibc's malloc asking for transparent huge pages
//   (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, set by the owner, with a fixed mmap threshold that
//   gives every activation back when freed: see INFERENCE_TUNABLES), which lets onnxruntime run without
//   its memory arena at the arena's speed (measured on IS-Net at 1024 x 1024, 2 threads: 1.3 s per
//   inference and a 0.94 GB peak, against 1.5 s and 1.13 GB with the arena, and 3.0 s without
//   either); the activations (about 0.7 GB) leave the host's heap alone; and the graph optimiser's
//   garbage stays in a short-lived process (below).
//
// Two roles, chosen by the first message:
// - { type: "prepare", model (path or bytes), target, sessionOptions }: reads the model, widens
//   float16 tensors to float32 (float16-widening.cjs), lets onnxruntime optimise the graph at the
//   highest level and write the result to `target`, answers { type: "prepared", widened }
//   and exits. The optimised model is specific to this machine's CPU: it is made at start, in a
//   private temporary directory, never shipped.
// - { type: "load", model (path), sessionOptions }: loads the prepared model (optimisation off: it
//   is already done), answers { type: "ready", inputNames, outputNames, inputs: [{ name, isTensor,
//   type, shape }] } or { type: "failed", message }, then serves jobs { id, rgb: Uint8Array
//   (interleaved RGB of the model's input size), settings, target?: { width, height } } with
//   { id, mask: Uint8Array (0..255), width, height } or { id, error: { code, message } }: the mask
//   at the model's output size, or scaled to `target` by the post-processing graph.
// The process exits when its owner goes away (the IPC channel closes).

const { readFileSync } = require("node:fs");
const { widenFloat16 } = require("./float16-widening.cjs");
const { postprocessModel, preprocessModel } = require("./tensor-graphs.cjs");

process.on("disconnect", () => process.exit(0));

let ort;

class JobError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The model's output checked: a float32 map with exactly two dimensions above 1 ([1, 1, H, W],
 * [1, H, W, 1], [1, H, W] or [H, W]). Answers its size. */
function mapSize(output, settings) {
  const spatial = output.dims.filter((dim) => dim !== 1);
  if (output.type !== "float32" || spatial.length !== 2) {
    throw new JobError(
      "MODEL_BAD_RESPONSE",
      `The model's output "${settings.outputName}" is ${output.type} [${output.dims.join(", ")}]; a float32 one-channel map was expected.`,
    );
  }
  return { height: spatial[0], width: spatial[1] };
}

/**
 * The pre- and post-processing sessions (tensor-graphs.cjs), made on first use for each set of
 * settings that shapes them. `resize` (post only): false, "up" or "down" (antialiased).
 */
const stages = new Map();
function stage(kind, settings, sessionOptions, resize = false) {
  const key = JSON.stringify(
    kind === "pre"
      ? [kind, settings.inputWidth, settings.inputHeight, settings.mean, settings.std, settings.layout]
      : [kind, settings.output, settings.normalize, settings.alphaClip, resize],
  );
  let entry = stages.get(key);
  if (entry === undefined) {
    // One thread each: a session's own pool threads spin for a while after each run, and on a
    // small machine those of the pre-processing session took cores from the model's first layers
    // (measured on 2 cores at 2048 x 1536: pre 7.5 -> 4.5 ms, post 12 -> 7 ms, the model's median
    // 844-967 -> 825-851 ms; these graphs are a few passes over memory, one core is enough).
    const options = { ...sessionOptions, graphOptimizationLevel: "all", intraOpNumThreads: 1 };
    const model = kind === "pre" ? preprocessModel(settings) : postprocessModel({ ...settings, resize });
    entry = ort.InferenceSession.create(model, options);
    entry.catch(() => stages.delete(key));
    stages.set(key, entry);
  }
  return entry;
}

function send(message) {
  process.send(message);
}

async function prepare({ runtimePath, model, target, sessionOptions }) {
  try {
    ort = require(runtimePath);
    // Only the widened copy stays referenced while onnxruntime optimises it.
    const { model: widened, widened: changed } = widenFloat16(
      typeof model === "string" ? readFileSync(model) : model,
    );
    const session = await ort.InferenceSession.create(widened, {
      ...sessionOptions,
      graphOptimizationLevel: "all",
      optimizedModelFilePath: target,
    });
    await session.release?.();
    send({ type: "prepared", widened: changed });
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
  process.on("message", async ({ id, rgb, settings, target }) => {
    try {
      const pre = await stage("pre", settings, sessionOptions);
      const { tensor: input } = await pre.run({
        rgb: new ort.Tensor("uint8", rgb, [1, settings.inputHeight, settings.inputWidth, 3]),
      });
      let outputs;
      try {
        outputs = await session.run({ [settings.inputName]: input }, [settings.outputName]);
      } catch (error) {
        throw new JobError("MODEL_BAD_RESPONSE", `The segmentation model failed: ${error?.message ?? error}`);
      }
      const output = outputs[settings.outputName];
      if (output === undefined)
        throw new JobError("MODEL_BAD_RESPONSE", `The model returned no "${settings.outputName}".`);
      const size = mapSize(output, settings);
      let mask;
      if (target === undefined) {
        ({ mask } = await (await stage("post", settings, sessionOptions)).run({ map: output }));
        send({ id, mask: mask.data, ...size });
      } else {
        // The map as [1, 1, h, w] (same data), scaled to the target by the graph's Resize.
        const map = new ort.Tensor("float32", output.data, [1, 1, size.height, size.width]);
        const dims = [1, 1, target.height, target.width].map(BigInt);
        // Antialiasing costs about 1.7x on an upscale, where it changes nothing: only when shrinking.
        const shrinks = target.width < size.width || target.height < size.height;
        const post = await stage("post", settings, sessionOptions, shrinks ? "down" : "up");
        ({ mask } = await post.run({ map, size: new ort.Tensor("int64", BigInt64Array.from(dims), [4]) }));
        send({ id, mask: mask.data, width: target.width, height: target.height });
      }
      output.dispose?.();
      mask.dispose?.();
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
