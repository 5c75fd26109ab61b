import type { BackgroundRemover } from "@pixport/core";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";
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
   * Inferences run at once, each in its own process with its own copy of the model (IS-Net: about
   * 0.85 GB at its peak); further calls wait in a first-in, first-out queue. One inference already
   * uses `threads` cores, so more than 1 rarely helps. @default 1
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
  /**
   * onnxruntime's CPU memory arena. Inference runs in a child process whose malloc asks for
   * transparent huge pages (glibc 2.35 or later); there, without the arena, every inference maps
   * its activations afresh at the arena's speed and gives them back after: measured on IS-Net at
   * 1024 x 1024 on 2 cores, 1.3 s per inference and a 0.94 GB peak, against 1.5 s and 1.13 GB with
   * the arena (which keeps its memory reserved between calls). Without huge pages (other C
   * libraries), arena-less inference faults its memory in page by page and takes twice as long, so
   * the arena is on there. @default false with glibc 2.35 or later (unless `GLIBC_TUNABLES` sets
   * `glibc.malloc.hugetlb=0`), else true
   */
  memoryArena?: boolean;
  /**
   * Probabilities within `alphaClip` of 0 or 1 become fully transparent or fully opaque, the rest
   * is stretched linearly: a subject the model is 99 % sure of is opaque (alpha 255, not 253), a
   * background it is 1 % unsure of is clear, soft edges stay soft. 0 keeps the map as it is.
   * @default 0.02
   */
  alphaClip?: number;
}

const rgb = z.tuple([z.number(), z.number(), z.number()]).readonly();

/**
 * The options' shape, checked before anything is loaded (unknown keys are refused): a bad option
 * is `INVALID_CONFIGURATION` naming it. What depends on the model (its input and output names,
 * the input size it accepts) is checked once the model is loaded.
 */
export const onnxBackgroundRemoverOptionsSchema = z
  .object({
    model: z.union([z.string().min(1), z.instanceof(Uint8Array)], {
      message: "must be a path to an .onnx file or its bytes",
    }),
    family: z.enum(Object.keys(MODEL_PRESETS) as [OnnxModelFamily, ...OnnxModelFamily[]]).optional(),
    inputName: z.string().min(1).optional(),
    outputName: z.string().min(1).optional(),
    threads: z.number().int().min(1).max(256).optional(),
    concurrency: z.number().int().min(1).max(64).optional(),
    timeoutMs: z.number().positive().optional(),
    maxInputPixels: z.number().int().positive().optional(),
    memoryArena: z.boolean().optional(),
    alphaClip: z.number().min(0).lt(0.5).optional(),
    inputWidth: z.number().int().min(8).max(4096).optional(),
    inputHeight: z.number().int().min(8).max(4096).optional(),
    mean: rgb.optional(),
    std: rgb
      .refine((values) => values.every((value) => value > 0), "must hold 3 positive numbers")
      .optional(),
    output: z.enum(["probability", "logits"]).optional(),
    normalize: z.enum(["minmax", "none"]).optional(),
  })
  .strict();

/** A {@link BackgroundRemover} holding a loaded model; `close()` releases it. */
export interface OnnxBackgroundRemover extends BackgroundRemover {
  /** The resolved model settings (family defaults merged with the options and the model's shapes). */
  readonly settings: Readonly<ResolvedSettings>;
  close(): Promise<void>;
}

export interface ResolvedSettings extends OnnxModelPreset {
  alphaClip: number;
  inputName: string;
  outputName: string;
  layout: "nchw" | "nhwc";
}

export function invalidConfig(message: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.INVALID_CONFIGURATION,
    message,
    cause === undefined ? {} : { cause },
  );
}

/** Resolves the input name, layout and size from the model's metadata and the options. */
export function resolveSettings(
  session: { inputNames: string[]; outputNames: string[]; inputs: InputInfo[] },
  options: OnnxBackgroundRemoverOptions,
): ResolvedSettings {
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
  const input = session.inputs[session.inputNames.indexOf(inputName)];
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
  const alphaClip = options.alphaClip ?? 0.02;
  if (!(alphaClip >= 0 && alphaClip < 0.5))
    throw invalidConfig("alphaClip must be at least 0 and below 0.5.");
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
    alphaClip,
  };
}

/** Input metadata as the inference process reports it. */
export interface InputInfo {
  name: string;
  isTensor: boolean;
  type: string | undefined;
  shape: Array<number | string>;
}
