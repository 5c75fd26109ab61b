import { availableParallelism } from "node:os";
import type { BackgroundRemovalOptions, BackgroundRemovalRequest, BackgroundRemover } from "@pixport/core";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { InferenceSession, Tensor } from "onnxruntime-node";
import sharp from "sharp";
import { MODEL_PRESETS, type OnnxModelFamily, type OnnxModelPreset } from "./presets.js";

/** Options of {@link createOnnxBackgroundRemover}. Only `model` is required. */
export interface OnnxBackgroundRemoverOptions extends Partial<OnnxModelPreset> {
  /**
   * The segmentation model: a path to an `.onnx` file or its bytes. pixport ships no model and
   * never downloads one; check the model's licence before you deploy it.
   */
  model: string | Uint8Array;
  /** Model family whose pre- and post-processing is used; any field can be overridden. @default "isnet" */
  family?: OnnxModelFamily;
  /** Input to feed. @default the model's first input */
  inputName?: string;
  /** Output holding the mask. @default the model's first output */
  outputName?: string;
  /** onnxruntime intra-op threads per inference. @default min(4, available cores) */
  threads?: number;
  /**
   * Inferences run at once; further calls wait in a first-in, first-out queue. One inference
   * already uses `threads` cores, so more than 1 rarely helps. @default 1
   */
  concurrency?: number;
  /**
   * Deadline (ms) of one call, queueing included; past it the call rejects with `MODEL_TIMEOUT`.
   * onnxruntime-node cannot interrupt a running inference: it finishes in the background and keeps
   * its slot, so the work in flight stays bounded. @default 30_000
   */
  timeoutMs?: number;
  /** Decoder pixel limit (the deployment's `maxInputPixels`). @default 100_000_000 */
  maxInputPixels?: number;
}

/** A {@link BackgroundRemover} holding a loaded model; `close()` releases it. */
export interface OnnxBackgroundRemover extends BackgroundRemover {
  /** The resolved model settings (family defaults merged with the options and the model's shapes). */
  readonly settings: Readonly<ResolvedSettings>;
  close(): Promise<void>;
}

interface ResolvedSettings extends OnnxModelPreset {
  inputName: string;
  outputName: string;
  layout: "nchw" | "nhwc";
}

function invalidConfig(message: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.INVALID_CONFIGURATION,
    message,
    cause === undefined ? {} : { cause },
  );
}

/** Resolves the input name, layout and size from the model's metadata and the options. */
function resolveSettings(session: InferenceSession, options: OnnxBackgroundRemoverOptions): ResolvedSettings {
  const preset = MODEL_PRESETS[options.family ?? "isnet"];
  if (preset === undefined) throw invalidConfig(`Unknown model family "${options.family}".`);
  const inputName = options.inputName ?? session.inputNames[0];
  const outputName = options.outputName ?? session.outputNames[0];
  if (inputName === undefined || !session.inputNames.includes(inputName)) {
    throw invalidConfig(`The model has no input "${inputName}" (inputs: ${session.inputNames.join(", ")}).`);
  }
  if (outputName === undefined || !session.outputNames.includes(outputName)) {
    throw invalidConfig(
      `The model has no output "${outputName}" (outputs: ${session.outputNames.join(", ")}).`,
    );
  }
  const input = session.inputMetadata[session.inputNames.indexOf(inputName)];
  if (input === undefined || !input.isTensor || input.type !== "float32") {
    throw invalidConfig(`The model's input "${inputName}" must be a float32 tensor.`);
  }
  const shape = input.shape;
  if (shape.length !== 4) {
    throw invalidConfig(
      `The model's input "${inputName}" must have 4 dimensions (N, C, H, W), not ${shape.length}.`,
    );
  }
  // A channel dimension of 3 tells the layout; with both symbolic, NCHW (every known family).
  const layout = shape[3] === 3 && shape[1] !== 3 ? "nhwc" : "nchw";
  const channels = layout === "nchw" ? shape[1] : shape[3];
  if (typeof channels === "number" && channels !== 3) {
    throw invalidConfig(`The model's input "${inputName}" must take 3 (RGB) channels, not ${channels}.`);
  }
  const [heightDim, widthDim] = layout === "nchw" ? [shape[2], shape[3]] : [shape[1], shape[2]];
  const fixed = (dim: number | string | undefined) => (typeof dim === "number" && dim > 0 ? dim : undefined);
  const inputWidth = options.inputWidth ?? fixed(widthDim) ?? preset.inputWidth;
  const inputHeight = options.inputHeight ?? fixed(heightDim) ?? preset.inputHeight;
  for (const [name, value] of [
    ["inputWidth", inputWidth],
    ["inputHeight", inputHeight],
  ] as const) {
    if (!Number.isInteger(value) || value < 8 || value > 4096) {
      throw invalidConfig(`${name} must be an integer from 8 to 4096.`);
    }
  }
  const mean = options.mean ?? preset.mean;
  const std = options.std ?? preset.std;
  if (mean.length !== 3 || std.length !== 3 || std.some((value) => !(value > 0))) {
    throw invalidConfig("mean and std must each hold 3 numbers, std all positive.");
  }
  return {
    inputName,
    outputName,
    layout,
    inputWidth,
    inputHeight,
    mean,
    std,
    output: options.output ?? preset.output,
    normalize: options.normalize ?? preset.normalize,
  };
}

/** Converts interleaved RGB bytes to the model's normalised float32 input. */
function toInputTensor(rgb: Uint8Array, settings: ResolvedSettings): Tensor {
  const { inputWidth: width, inputHeight: height, mean, std, layout } = settings;
  const plane = width * height;
  const data = new Float32Array(plane * 3);
  for (let channel = 0; channel < 3; channel += 1) {
    const scale = 1 / (255 * std[channel]!);
    const offset = mean[channel]! / std[channel]!;
    for (let pixel = 0; pixel < plane; pixel += 1) {
      const value = rgb[pixel * 3 + channel]! * scale - offset;
      if (layout === "nchw") data[channel * plane + pixel] = value;
      else data[pixel * 3 + channel] = value;
    }
  }
  const dims = layout === "nchw" ? [1, 3, height, width] : [1, height, width, 3];
  return new Tensor("float32", data, dims);
}

/** Turns the model's output map into 0..255 alpha bytes of the map's own size. */
function toMask(
  output: Tensor,
  settings: ResolvedSettings,
): { mask: Uint8Array; width: number; height: number } {
  // Accept [1, 1, H, W], [1, H, W, 1], [1, H, W] and [H, W]: exactly two dimensions above 1.
  const spatial = output.dims.filter((dim) => dim !== 1);
  if (output.type !== "float32" || spatial.length !== 2) {
    throw new ImagePipelineError(
      ErrorCodes.MODEL_BAD_RESPONSE,
      `The model's output "${settings.outputName}" is ${output.type} [${output.dims.join(", ")}]; a float32 one-channel map was expected.`,
    );
  }
  const [height, width] = spatial as [number, number];
  const values = output.data as Float32Array;
  const count = width * height;
  const probabilities = new Float32Array(count);
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < count; index += 1) {
    let value = values[index]!;
    if (settings.output === "logits") value = 1 / (1 + Math.exp(-value));
    if (Number.isNaN(value)) value = 0;
    probabilities[index] = value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  const mask = new Uint8Array(count);
  // A flat map has no subject to stretch: keep it as it is rather than amplify noise.
  const stretch = settings.normalize === "minmax" && max - min > 1e-6;
  for (let index = 0; index < count; index += 1) {
    const value = stretch ? (probabilities[index]! - min) / (max - min) : probabilities[index]!;
    mask[index] = Math.round(Math.min(1, Math.max(0, value)) * 255);
  }
  return { mask, width, height };
}

/** A first-in, first-out gate letting `limit` tasks run at once. */
function createGate(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return {
    /** Resolves a release function once a slot is free; `cancel` withdraws a waiting request. */
    acquire(): { ready: Promise<() => void>; cancel: () => void } {
      let grant: (() => void) | undefined;
      const ready = new Promise<() => void>((resolve) => {
        const release = () => {
          running -= 1;
          const next = waiting.shift();
          if (next !== undefined) next();
        };
        grant = () => {
          running += 1;
          resolve(release);
        };
      });
      if (running < limit) grant!();
      else waiting.push(grant!);
      return {
        ready,
        cancel: () => {
          const index = waiting.indexOf(grant!);
          if (index >= 0) waiting.splice(index, 1);
        },
      };
    },
  };
}

/**
 * A {@link BackgroundRemover} running a user-supplied ONNX segmentation model (U²-Net, IS-Net,
 * BiRefNet or anything with their input and output shapes) on onnxruntime-node, on the CPU.
 *
 * Loads and checks the model once: a missing file, an unreadable model or shapes that do not fit
 * reject with `INVALID_CONFIGURATION`, so a deployment fails at start, not on the first request.
 *
 * Per call: the image is decoded with EXIF orientation, flattened on white if it has alpha,
 * stretched to the model's input size (the families are trained on stretched, not letterboxed,
 * inputs) and normalised; the output map is turned into probabilities (sigmoid for logits,
 * optional per-image stretch), scaled back to the image's size with a bilinear kernel and used as
 * the alpha channel of the original pixels (combined with any existing alpha), as a PNG.
 */
export async function createOnnxBackgroundRemover(
  options: OnnxBackgroundRemoverOptions,
): Promise<OnnxBackgroundRemover> {
  const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxInputPixels = options.maxInputPixels ?? 100_000_000;
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw invalidConfig("concurrency must be a positive integer.");
  if (!(timeoutMs > 0)) throw invalidConfig("timeoutMs must be positive.");
  let session: InferenceSession;
  const sessionOptions: InferenceSession.SessionOptions = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionProviders: ["cpu"],
    graphOptimizationLevel: "all",
  };
  try {
    session =
      typeof options.model === "string"
        ? await InferenceSession.create(options.model, sessionOptions)
        : await InferenceSession.create(options.model, sessionOptions);
  } catch (error) {
    const source = typeof options.model === "string" ? `"${options.model}"` : "the given bytes";
    throw invalidConfig(`Could not load the ONNX model from ${source}: ${(error as Error).message}`, error);
  }
  let settings: ResolvedSettings;
  try {
    settings = resolveSettings(session, options);
  } catch (error) {
    await session.release();
    throw error;
  }
  const gate = createGate(concurrency);
  let closed = false;

  async function segment(
    request: BackgroundRemovalRequest,
    signal: AbortSignal | undefined,
  ): Promise<Uint8Array> {
    const source = () =>
      sharp(request.image, { limitInputPixels: maxInputPixels, failOn: "error", autoOrient: true });
    const meta = await source().metadata();
    const width = meta.autoOrient?.width ?? meta.width;
    const height = meta.autoOrient?.height ?? meta.height;
    if (width !== request.width || height !== request.height) {
      throw new ImagePipelineError(
        ErrorCodes.INTERNAL,
        `The image is ${width} x ${height}, expected ${request.width} x ${request.height}.`,
      );
    }
    const rgb = await source()
      .flatten({ background: "#ffffff" })
      .toColourspace("srgb")
      .resize(settings.inputWidth, settings.inputHeight, { fit: "fill", kernel: "lanczos3" })
      .removeAlpha()
      .raw()
      .toBuffer();
    signal?.throwIfAborted();
    const input = toInputTensor(new Uint8Array(rgb.buffer, rgb.byteOffset, rgb.byteLength), settings);
    let outputs: InferenceSession.OnnxValueMapType;
    try {
      outputs = await session.run({ [settings.inputName]: input }, [settings.outputName]);
    } catch (error) {
      throw new ImagePipelineError(
        ErrorCodes.MODEL_BAD_RESPONSE,
        `The segmentation model failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
    const output = outputs[settings.outputName] as Tensor | undefined;
    if (output === undefined) {
      throw new ImagePipelineError(
        ErrorCodes.MODEL_BAD_RESPONSE,
        `The model returned no "${settings.outputName}".`,
      );
    }
    const map = toMask(output, settings);
    output.dispose();
    signal?.throwIfAborted();
    const alpha = await sharp(map.mask, { raw: { width: map.width, height: map.height, channels: 1 } })
      .resize(width, height, { fit: "fill", kernel: "linear" })
      .extractChannel(0)
      .raw()
      .toBuffer();
    if (meta.hasAlpha) {
      // A pixel transparent in the input stays at most as opaque as it was.
      const existing = await source().ensureAlpha().extractChannel(3).raw().toBuffer();
      for (let index = 0; index < alpha.length; index += 1)
        alpha[index] = Math.min(alpha[index]!, existing[index]!);
    }
    // sharp applies removeAlpha after joinChannel in one pipeline: take the RGB pixels first.
    const rgbFull = await source().removeAlpha().toColourspace("srgb").raw().toBuffer();
    const cutout = await sharp(rgbFull, { raw: { width, height, channels: 3 } })
      .joinChannel(alpha, { raw: { width, height, channels: 1 } })
      .png({ compressionLevel: 6 })
      .toBuffer();
    return new Uint8Array(cutout.buffer, cutout.byteOffset, cutout.byteLength);
  }

  return {
    name: `onnx-${options.family ?? "isnet"}`,
    settings,
    async remove(request: BackgroundRemovalRequest, callOptions: BackgroundRemovalOptions = {}) {
      const { signal } = callOptions;
      if (closed)
        throw new ImagePipelineError(ErrorCodes.MODEL_UNAVAILABLE, "The background remover is closed.");
      signal?.throwIfAborted();
      const slot = gate.acquire();
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const stop = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          slot.cancel();
          reject(
            new ImagePipelineError(
              ErrorCodes.MODEL_TIMEOUT,
              `Background removal took longer than ${timeoutMs} ms.`,
              { retryAfterSeconds: Math.ceil(timeoutMs / 1000) },
            ),
          );
        }, timeoutMs);
        onAbort = () => {
          slot.cancel();
          reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      // The work holds its slot until it really ends, even when the caller stopped waiting.
      const work = slot.ready.then(async (release) => {
        try {
          return await segment(request, signal);
        } finally {
          release();
        }
      });
      work.catch(() => {});
      try {
        return await Promise.race([work, stop]);
      } finally {
        clearTimeout(timer);
        if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await session.release();
    },
  };
}
