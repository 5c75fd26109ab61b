import { rm } from "node:fs/promises";
import { availableParallelism } from "node:os";
import type { BackgroundRemovalOptions, BackgroundRemovalRequest } from "@pixport/core";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import {
  type CutoutPixels,
  cutoutPng,
  decodeCutoutPixels,
  openRemovalImage,
  parseOptions,
  type RemovalImage,
} from "@pixport/core/adapter-kit";
import type { InferenceSession } from "onnxruntime-node";
import sharp, { type Sharp } from "sharp";
import { hugePageMalloc } from "./inference-env.js";
import { closedError, InferenceProcess, type MaskMap, ProcessPool } from "./inference-pool.js";
import { prepareModel } from "./prepare-model.js";
import {
  invalidConfig,
  type OnnxBackgroundRemover,
  type OnnxBackgroundRemoverOptions,
  onnxBackgroundRemoverOptionsSchema,
  type ResolvedSettings,
  resolveSettings,
} from "./settings.js";

/**
 * Images up to this many pixels get their mask scaled to full size by the inference process's
 * post-processing graph (onnxruntime's bilinear Resize, before rounding: about 10 ms for 3
 * megapixels on 2 cores, against about 35 ms for libvips' one-band resize in the host). It runs
 * after the model has given back its activations, so up to here (about 9 bytes per pixel: 0.3 GB)
 * it stays below the process's own peak; larger images are scaled by libvips in the host, which
 * streams.
 */
const PROCESS_RESIZE_MAX_PIXELS = 32_000_000;

/**
 * A {@link BackgroundRemover} running a user-supplied ONNX segmentation model (U²-Net, IS-Net,
 * BiRefNet or anything with their input and output shapes) on onnxruntime-node, on the CPU.
 *
 * Loads and checks the model once: a missing file, an unreadable model or shapes that do not fit
 * reject with `INVALID_CONFIGURATION`, so a deployment fails at start, not on the first request.
 *
 * Inference runs in child processes (one session each, `concurrency` of them, forked from this
 * package's `inference-process.cjs`): onnxruntime-node's `run()` holds its thread for the whole
 * inference and cannot be interrupted, and a process can be stopped for real. A call past
 * `timeoutMs`, or whose signal aborts, rejects at once (`MODEL_TIMEOUT`, or the signal's reason)
 * and its inference, if it started, is killed with its process, which is replaced for the next
 * call (loading a prepared model takes about a second). `close()` refuses new calls, waits for
 * the inferences in flight, then stops the processes and removes the prepared model.
 *
 * At creation the model is prepared once in a short-lived process: float16 tensors are widened to
 * float32 (onnxruntime's CPU provider has no float16 kernels for most layers and would cast around
 * each one) and the graph is optimised at onnxruntime's highest level for this CPU, then saved in
 * a private temporary directory that the inference processes load. Session options, measured on
 * IS-Net (fp16 weights) at 1024 x 1024 on 2 cores, as `node bench/background.mjs` prints them:
 * `intraOpNumThreads` = `threads`, one inter-op thread, the memory pattern off (with the arena it
 * raised the peak to 2.3 GB at the same speed), the arena as `memoryArena` says.
 *
 * Per call: the image is decoded with EXIF orientation, flattened on white if it has alpha,
 * stretched to the model's input size (the families are trained on stretched, not letterboxed,
 * inputs) and normalised; the output map is turned into probabilities (sigmoid for logits,
 * optional per-image stretch), scaled back to the image's size with a bilinear kernel (by the
 * inference process's post-processing graph, before rounding, for images up to 32 megapixels; by
 * libvips in the host, which streams, above that) and used as the alpha channel of the original
 * pixels (combined with any existing alpha), as a PNG. The pre- and post-processing graphs run in
 * the inference process on one thread each.
 *
 * @example
 * ```ts
 * const remover = await createOnnxBackgroundRemover({ model: "/models/isnet-general-use.onnx", family: "isnet" });
 * const pipeline = createImagePipeline({ ...deps, backgroundRemover: remover });
 * ```
 */
export async function createOnnxBackgroundRemover(
  options: OnnxBackgroundRemoverOptions,
): Promise<OnnxBackgroundRemover> {
  parseOptions(onnxBackgroundRemoverOptionsSchema, options, "createOnnxBackgroundRemover");
  const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxInputPixels = options.maxInputPixels ?? 100_000_000;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw invalidConfig("concurrency must be a positive integer.");
  }
  if (!Number.isInteger(threads) || threads < 1) throw invalidConfig("threads must be a positive integer.");
  if (!(timeoutMs > 0)) throw invalidConfig("timeoutMs must be positive.");
  const sessionOptions: InferenceSession.SessionOptions = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionProviders: ["cpu"],
    enableCpuMemArena: options.memoryArena ?? !hugePageMalloc(),
    enableMemPattern: false,
    // Warnings only (onnxruntime warns that an optimised model is specific to this CPU).
    logSeverityLevel: 3,
  };
  const { settings, pool, removePrepared } = await loadModel(options, sessionOptions, concurrency);
  const model: LoadedModel = { settings, pool, maxInputPixels, closed: false };
  return {
    name: `onnx-${options.family ?? "isnet"}`,
    settings,
    async remove(request: BackgroundRemovalRequest, callOptions: BackgroundRemovalOptions = {}) {
      const { signal } = callOptions;
      if (model.closed) throw closedError();
      signal?.throwIfAborted();
      const call: CallState = { gaveUp: false, slot: undefined, running: undefined };
      const stop = callStop(call, timeoutMs, signal);
      const work = runCall(model, request, call, signal);
      work.catch(() => {});
      try {
        return await Promise.race([work, stop.reached]);
      } finally {
        stop.clear();
      }
    },
    async close() {
      if (model.closed) return;
      model.closed = true;
      await pool.close();
      await removePrepared();
    },
  };
}

/** A remover's loaded model: its settings, its processes, and whether it is closed. */
interface LoadedModel {
  settings: ResolvedSettings;
  pool: ProcessPool;
  maxInputPixels: number;
  closed: boolean;
}

/**
 * Prepares the model (see {@link prepareModel}), starts its first inference process and resolves
 * the settings from the model's metadata; on a failure, what was made is removed and the error is
 * `INVALID_CONFIGURATION`.
 */
async function loadModel(
  options: OnnxBackgroundRemoverOptions,
  sessionOptions: InferenceSession.SessionOptions,
  concurrency: number,
): Promise<{ settings: ResolvedSettings; pool: ProcessPool; removePrepared: () => Promise<void> }> {
  const source = typeof options.model === "string" ? `"${options.model}"` : "the given bytes";
  let prepared: { directory: string; file: string };
  try {
    prepared = await prepareModel(options.model, sessionOptions);
  } catch (error) {
    throw invalidConfig(`Could not load the ONNX model from ${source}: ${(error as Error).message}`, error);
  }
  // The prepared model is already optimised for this CPU.
  const loadOptions = { ...sessionOptions, graphOptimizationLevel: "disabled" } as const;
  const spawn = () => new InferenceProcess(prepared.file, loadOptions);
  const removePrepared = () => rm(prepared.directory, { recursive: true, force: true });
  const first = spawn();
  let metadata: Awaited<InferenceProcess["ready"]>;
  try {
    metadata = await first.ready;
  } catch (error) {
    await first.terminate();
    await removePrepared();
    throw invalidConfig(`Could not load the ONNX model from ${source}: ${(error as Error).message}`, error);
  }
  let settings: ResolvedSettings;
  try {
    settings = resolveSettings(metadata, options);
  } catch (error) {
    await first.terminate();
    await removePrepared();
    throw error;
  }
  return { settings, pool: new ProcessPool(concurrency, spawn, first), removePrepared };
}

/**
 * One call's state. Once the caller stopped waiting (deadline or abort) `gaveUp` is set: no
 * inference starts after that, and one that is running is killed with its process.
 */
interface CallState {
  gaveUp: boolean;
  slot: ReturnType<ProcessPool["acquire"]> | undefined;
  running: InferenceProcess | undefined;
}

/**
 * Gives the call up when `timeoutMs` pass (`reached` rejects with `MODEL_TIMEOUT`) or its signal
 * aborts (with the signal's reason); `clear` stops both.
 */
function callStop(
  call: CallState,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): { reached: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const giveUp = () => {
    call.gaveUp = true;
    call.slot?.cancel();
    void call.running?.terminate();
  };
  const reached = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      giveUp();
      reject(
        new ImagePipelineError(
          ErrorCodes.MODEL_TIMEOUT,
          `Background removal took longer than ${timeoutMs} ms.`,
          {
            retryAfterSeconds: Math.ceil(timeoutMs / 1000),
          },
        ),
      );
    }, timeoutMs);
    onAbort = () => {
      giveUp();
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  reached.catch(() => {});
  return {
    reached,
    clear() {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    },
  };
}

/** The work of one call: prepare the input, run the model in a process of the pool, compose the PNG. */
async function runCall(
  model: LoadedModel,
  request: BackgroundRemovalRequest,
  call: CallState,
  signal: AbortSignal | undefined,
): Promise<Uint8Array> {
  const { settings, pool } = model;
  const prepared = await prepare(request, settings, model.maxInputPixels);
  if (call.gaveUp) return new Uint8Array();
  call.slot = pool.acquire();
  const worker = await call.slot.worker;
  let map: MaskMap;
  let pixels: Promise<CutoutPixels> | undefined;
  try {
    if (model.closed) throw closedError();
    // The caller already has its MODEL_TIMEOUT or abort: this value is never seen.
    if (call.gaveUp) return new Uint8Array();
    await worker.ready.catch((error: Error) => {
      throw new ImagePipelineError(ErrorCodes.MODEL_UNAVAILABLE, `The model did not load: ${error.message}`);
    });
    call.running = worker;
    // The full-size pixels the mask is joined to are decoded while the model runs.
    pixels = decodeCutoutPixels(prepared.image);
    pixels.catch(() => {});
    map = await worker.run(prepared.rgb, settings, maskTarget(prepared.image));
  } finally {
    call.running = undefined;
    pool.release(worker);
  }
  signal?.throwIfAborted();
  return compose(prepared.image, map, pixels ?? decodeCutoutPixels(prepared.image));
}

/** Opens and checks the image, and makes the model's input: RGB bytes of the input size. */
async function prepare(
  request: BackgroundRemovalRequest,
  settings: ResolvedSettings,
  maxInputPixels: number,
) {
  const image = await openRemovalImage(sharp, request, maxInputPixels);
  const rgb = await image
    .source()
    .flatten({ background: "#ffffff" })
    .toColourspace("srgb")
    .resize(settings.inputWidth, settings.inputHeight, { fit: "fill", kernel: "lanczos3" })
    .removeAlpha()
    .raw()
    .toBuffer();
  return { image, rgb: new Uint8Array(rgb) };
}

/**
 * The size the inference process scales the mask to: the image's, up to
 * {@link PROCESS_RESIZE_MAX_PIXELS}; beyond it the mask comes back at the model's size and libvips
 * scales it here (see {@link compose}).
 */
function maskTarget(image: RemovalImage<Sharp>) {
  return image.width * image.height <= PROCESS_RESIZE_MAX_PIXELS
    ? { width: image.width, height: image.height }
    : undefined;
}

/** The mask at the image's size (scaled here when the process did not) joined as alpha, as a PNG. */
async function compose(
  image: RemovalImage<Sharp>,
  map: MaskMap,
  pixels: Promise<CutoutPixels>,
): Promise<Uint8Array> {
  const alpha =
    map.width === image.width && map.height === image.height
      ? Buffer.from(map.mask.buffer, map.mask.byteOffset, map.mask.byteLength)
      : await sharp(map.mask, { raw: { width: map.width, height: map.height, channels: 1 } })
          .resize(image.width, image.height, { fit: "fill", kernel: "linear" })
          .extractChannel(0)
          .raw()
          .toBuffer();
  return cutoutPng(image, alpha, pixels);
}
