import { z } from "zod";
import {
  ErrorCodes,
  ImagePipelineError,
  isImagePipelineError,
  type ValidationIssue,
  validationError,
} from "../errors.js";
import { ANIMATED_FORMATS, type Image, type ImageFormat, type ImageRecord } from "../image.js";
import { DEFAULT_LIMITS, type Limits, outputPixelsIssue } from "../limits.js";
import type { EncodedImage, ImageCodec } from "../ports/image-codec.js";
import {
  type blurSchema,
  type convertSchema,
  type cropSchema,
  formatIssues,
  MAX_TRANSFORM_STEPS,
  type mirrorSchema,
  type modulateSchema,
  type resizeSchema,
  type rotateSchema,
  TRANSFORM_STEP_OPS,
  type TransformStepInput,
  type TransformStepOp,
  transformSchema,
  type watermarkSchema,
} from "../schemas.js";
import { BLACK } from "../transforms/color.js";
import { planOutputSize, type Size, stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";
import {
  assertCodecSupports,
  type Caller,
  loadOwnedImage,
  type PipelineContext,
  probeInput,
  processingTimeout,
  producedImageSteps,
  runCodec,
  storeNewImage,
} from "./context.js";
import { type Cancellable, type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";
import {
  type BuildContext,
  type BuiltStep,
  type Current,
  OPERATIONS,
  type OperationEntry,
} from "./transform-steps.js";

/** Input of `mirror`: the source image id and `{mode, name?}`. */
export type MirrorImageInput = ImageBodyInput<typeof mirrorSchema>;
/** Input of `convert`: the source image id and `{format, quality?, name?}`. */
export type ConvertImageInput = ImageBodyInput<typeof convertSchema>;
/** Input of `resize`: the source image id and `{width?, height?, fit?, position?, letterbox_color?, name?}`. */
export type ResizeImageInput = ImageBodyInput<typeof resizeSchema>;
/** Input of `crop`: the source image id and `{x1, y1, x2, y2, name?}`. */
export type CropImageInput = ImageBodyInput<typeof cropSchema>;
/** Input of `rotate`: the source image id and `{angle, unit?, background_color?, name?}`. */
export type RotateImageInput = ImageBodyInput<typeof rotateSchema>;
/** Input of `modulate`: the source image id and at least one adjustment. */
export type ModulateImageInput = ImageBodyInput<typeof modulateSchema>;
/** Input of `blur`: the source image id and `{sigma?, name?}`. */
export type BlurImageInput = ImageBodyInput<typeof blurSchema>;
/** Input of `watermark`: the source image id and `{watermarks, name?}`. */
export type WatermarkImageInput = ImageBodyInput<typeof watermarkSchema>;
/** Input of {@link transformImage}: the source image id and `{name?, steps}` (1 to 10 steps). */
export type TransformInput = ImageBodyInput<typeof transformSchema>;
/** Input of {@link transformImage}. */
export type FusedTransformInput = TransformInput;

/**
 * An animation written to an animated format the codec cannot animate would silently lose its
 * frames: refused with `UNSUPPORTED_OPERATION` (still formats keep the first frame, as documented).
 */
function assertAnimationKept(context: PipelineContext, source: ImageRecord, output: ImageFormat): void {
  const frames = source.frames ?? 1;
  if (frames <= 1 || !ANIMATED_FORMATS.includes(output)) return;
  const { name, capabilities } = context.codec;
  if ((capabilities.animation ?? []).includes(output)) return;
  throw new ImagePipelineError(
    ErrorCodes.UNSUPPORTED_OPERATION,
    `The ${name} codec cannot write ${output} animations.`,
    {
      issues: [
        {
          path: "format",
          message: `${output} would keep 1 of this animation's ${frames} frames: the ${name} codec cannot write ${output} animations (use ${(capabilities.animation ?? []).join(" or ") || "a still format"})`,
        },
      ],
    },
  );
}

/**
 * Refuses a plan whose output exceeds its format's `limits.maxOutputPixels` (422
 * `OUTPUT_TOO_LARGE`), naming the field of the last step that set the size, else `format`.
 */
function assertOutputPixels(limits: Pick<Limits, "maxOutputPixels">, plan: Plan, finalSize: Size): void {
  const sizing = plan.steps.findLastIndex(
    (step) => step.type === "resize" || step.type === "rotate" || step.type === "crop",
  );
  const field = (sizing >= 0 ? plan.fields[sizing] : undefined) ?? "format";
  const issue = outputPixelsIssue(limits, plan.format, finalSize, field);
  if (issue !== null) throw validationError([issue], ErrorCodes.OUTPUT_TOO_LARGE);
}

/** A plan ready for the codec: steps in order, the output and the field blamed per step. */
interface Plan {
  steps: TransformStep[];
  fields: string[];
  format: ImageFormat;
  quality: number;
}

/**
 * Runs a plan on a stored source and stores the result: checks the planned output size before
 * any decode, appends the test mark (once), reserves the job's memory, runs every step in one
 * decode/encode, and stores one new image.
 */
async function runPlan(
  context: PipelineContext,
  caller: Caller,
  source: ImageRecord,
  plan: Plan,
  name: string | undefined,
  signal: AbortSignal | undefined,
): Promise<Image> {
  // Only a derived dimension (resize with one side given) or a rotation can exceed the limit:
  // request fields are bounded by the schemas, so the plan names the field the caller sent.
  const finalSize = planOutputSize(plan.steps, source, context.limits.maxOutputSide, (step) => {
    return plan.fields[plan.steps.indexOf(step)] ?? "body";
  });
  assertOutputPixels(context.limits, plan, finalSize);
  const steps = [...plan.steps, ...producedImageSteps(context, caller, finalSize)];
  assertCodecSupports(context, steps, plan.format);
  assertAnimationKept(context, source, plan.format);
  const encoded = await runCodec(context, {
    input: source,
    steps,
    output: { format: plan.format, quality: plan.quality, flattenBackground: BLACK },
    onError: "stored",
    memory: { size: source, field: plan.fields[0] ?? "body", frames: source.frames, signal },
    capabilitiesChecked: true,
  });
  return storeNewImage(context, caller, encoded, name ?? source.name);
}

/**
 * One transform operation (`POST /v1/images/{image_id}/<op>`): validates path and body together
 * (every failing field in one 422), loads the caller's source image, builds its steps and runs
 * them in one decode/encode.
 */
async function runOperation<K extends TransformStepOp>(
  context: PipelineContext,
  caller: Caller,
  input: ParsedImageBody<(typeof OPERATIONS)[K]["schema"]>,
  op: K,
): Promise<Image> {
  const operation = OPERATIONS[op] as OperationEntry<z.ZodType>;
  const body: unknown = input.body;
  const source = await loadOwnedImage(context, caller, input.imageId);
  const output = op === "convert" ? (body as { format: ImageFormat }).format : source.format;
  const built = await operation.build(body, source, { context, caller, output });
  return runPlan(
    context,
    caller,
    source,
    {
      steps: built.steps,
      fields: built.steps.map(() => built.sizeField),
      format: built.format ?? source.format,
      quality: built.quality ?? context.encodeQuality,
    },
    (body as { name?: string }).name,
    input.signal,
  );
}

/** The validated steps of a fused transform, each with its operation's output type. */
export type ParsedStep = {
  [K in TransformStepOp]: { op: K; index: number; body: z.output<(typeof OPERATIONS)[K]["schema"]> };
}[TransformStepOp];

/**
 * Validates a fused transform's body step by step, so every error names its step: `steps.1.op`,
 * `steps.0.width`. `name` is given once, at the top level, not per step.
 */
function parseTransformBody(body: unknown): { name: string | undefined; steps: ParsedStep[] } {
  const issues: ValidationIssue[] = [];
  const value = (body === undefined ? {} : body) as Record<string, unknown>;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw validationError([{ path: "body", message: "must be a JSON object" }]);
  }
  let name: string | undefined;
  const named = z.object({ name: transformSchema.shape.name }).safeParse({ name: value.name });
  if (named.success) name = named.data.name;
  else issues.push(...formatIssues(named.error.issues));
  const steps: ParsedStep[] = [];
  const raw = value.steps;
  if (!Array.isArray(raw) || raw.length < 1 || raw.length > MAX_TRANSFORM_STEPS) {
    issues.push({
      path: "steps",
      message: raw === undefined ? "is required" : `must be an array of 1 to ${MAX_TRANSFORM_STEPS} steps`,
    });
    throw validationError(issues);
  }
  for (const [index, step] of raw.entries()) {
    const at = (path: string) => `steps.${index}.${path}`;
    if (typeof step !== "object" || step === null || Array.isArray(step)) {
      issues.push({ path: `steps.${index}`, message: "must be an object with an op" });
      continue;
    }
    const { op, ...fields } = step as Record<string, unknown>;
    if (typeof op !== "string" || !TRANSFORM_STEP_OPS.includes(op as TransformStepOp)) {
      issues.push({
        path: at("op"),
        message: op === undefined ? "is required" : `must be one of: ${TRANSFORM_STEP_OPS.join(", ")}`,
      });
      continue;
    }
    if (fields.name !== undefined) {
      issues.push({
        path: at("name"),
        message: "is not allowed in a step; name the result at the top level",
      });
      continue;
    }
    const parsed = OPERATIONS[op as TransformStepOp].schema.safeParse(fields);
    if (!parsed.success) {
      issues.push(...formatIssues(parsed.error.issues).map((issue) => ({ ...issue, path: at(issue.path) })));
      continue;
    }
    steps.push({ op, index, body: parsed.data } as ParsedStep);
  }
  if (issues.length > 0) throw validationError(issues);
  return { name, steps };
}

/** Builds every step of a fused transform against the image the previous steps produce. */
async function buildSteps(
  parsed: readonly ParsedStep[],
  start: Current,
  build: Omit<BuildContext, "output">,
  sourceFormat: ImageFormat,
): Promise<Plan> {
  // The output is known before any step is built: the last convert's format, else the source's.
  let format = sourceFormat;
  let quality = build.context.encodeQuality;
  for (const step of parsed) {
    if (step.op === "convert") {
      format = step.body.format;
      quality = step.body.quality;
    }
  }
  const steps: TransformStep[] = [];
  const fields: string[] = [];
  let current: Current = { width: start.width, height: start.height };
  for (const step of parsed) {
    const operation = OPERATIONS[step.op] as OperationEntry<z.ZodType>;
    let built: BuiltStep;
    try {
      built = await operation.build(step.body, current, { ...build, output: format });
    } catch (error) {
      throw prefixIssues(error, step.index);
    }
    for (const produced of built.steps) {
      steps.push(produced);
      fields.push(`steps.${step.index}.${built.sizeField}`);
      current = stepOutputSize(produced, current);
    }
  }
  return { steps, fields, format, quality };
}

/** A step's validation error with its paths under `steps.<index>.`. */
function prefixIssues(error: unknown, index: number): unknown {
  if (!isImagePipelineError(error) || error.issues.length === 0) return error;
  return validationError(
    error.issues.map((issue) => ({ ...issue, path: `steps.${index}.${issue.path}` })),
    error.code,
  );
}

/** {@link TransformInput} once validated: every step parsed with its operation's schema. */
export interface ParsedTransform extends Cancellable {
  imageId: string;
  name: string | undefined;
  steps: ParsedStep[];
}

/** Validates a fused transform: the image id first, then the body step by step. */
export function parseTransform(input: TransformInput): ParsedTransform {
  const { imageId } = parseImageId(input);
  const parsed = parseTransformBody(input?.body);
  return { imageId, name: parsed.name, steps: parsed.steps, signal: input?.signal };
}

/**
 * `POST /v1/images/{image_id}/transform`: up to 10 steps (resize, crop, rotate, mirror, modulate,
 * blur, watermark, convert; the fields and bounds of the single operations) in one decode and one
 * encode, stored as one new image, billed as one, with the test mark applied once. Every error
 * names its step (`steps.1.op ...`).
 */
export async function transformImage(
  context: PipelineContext,
  caller: Caller,
  input: ParsedTransform,
): Promise<Image> {
  const source = await loadOwnedImage(context, caller, input.imageId);
  const plan = await buildSteps(input.steps, source, { context, caller }, source.format);
  return runPlan(context, caller, source, plan, input.name, input.signal);
}

/** Options of {@link processImage}. */
export interface ProcessImageOptions {
  codec: ImageCodec;
  /** Safety limits. @default the pipeline's defaults */
  limits?: Partial<Limits>;
  /** Quality of jpeg/webp output when no `convert` step sets one. @default 90 */
  quality?: number;
}

/**
 * Bytes in, bytes out, no storage: validates `steps` as `POST .../transform` does (same fields,
 * bounds and messages; `watermark` needs stored overlays and is refused here), checks the input
 * against the limits from its header, and runs every step in one decode and one encode.
 *
 * @example
 * ```ts
 * const { data, width, height } = await processImage(bytes, [
 *   { op: "resize", width: 800 },
 *   { op: "convert", format: "webp", quality: 80 },
 * ], { codec: createSharpCodec() });
 * ```
 */
export async function processImage(
  bytes: Uint8Array,
  steps: readonly TransformStepInput[],
  options: ProcessImageOptions,
): Promise<EncodedImage> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const parsed = parseTransformBody({ steps });
  const watermark = parsed.steps.find((step) => step.op === "watermark");
  if (watermark !== undefined) {
    throw validationError([
      {
        path: `steps.${watermark.index}.op`,
        message: "watermark needs stored images: use pipeline.transform",
      },
    ]);
  }
  const header = await probeInput(options.codec, bytes, limits, "image");
  const plan = await buildSteps(
    parsed.steps,
    header,
    {
      context: { encodeQuality: options.quality ?? 90, codec: options.codec } as PipelineContext,
      caller: LIBRARY_CALLER,
    },
    header.format,
  );
  const finalSize = planOutputSize(
    plan.steps,
    header,
    limits.maxOutputSide,
    (step) => plan.fields[plan.steps.indexOf(step)] ?? "steps",
  );
  assertOutputPixels(limits, plan, finalSize);
  try {
    return await options.codec.transform({
      input: bytes,
      steps: plan.steps,
      output: { format: plan.format, quality: plan.quality, flattenBackground: BLACK },
      limits: { maxInputPixels: limits.maxInputPixels, timeoutMs: limits.maxJobMs },
    });
  } catch (error) {
    if (isImagePipelineError(error) && error.code === ErrorCodes.PROCESSING_TIMEOUT)
      throw processingTimeout(error);
    throw error;
  }
}

/** The caller of storage-free processing (no account: nothing is stored or billed). */
const LIBRARY_CALLER: Caller = { accountId: "library", keyKind: "live", keyId: "library" };

/**
 * A single transform (`POST /v1/images/{image_id}/<op>`) over its validated input: the operation's
 * body parsed by its schema (the same entry a step of a fused transform is built by).
 */
const single =
  <K extends TransformStepOp>(op: K) =>
  (context: PipelineContext, caller: Caller, input: ParsedImageBody<(typeof OPERATIONS)[K]["schema"]>) =>
    runOperation(context, caller, input, op);

/** `POST /v1/images/{image_id}/mirror`. */
export const mirrorImage = single("mirror");
/** `POST /v1/images/{image_id}/convert`: re-encodes to `format` (`jpg` is `jpeg`) at `quality`. */
export const convertImage = single("convert");
/** `POST /v1/images/{image_id}/resize`. */
export const resizeImage = single("resize");
/** `POST /v1/images/{image_id}/crop`. */
export const cropImage = single("crop");
/** `POST /v1/images/{image_id}/rotate`. */
export const rotateImage = single("rotate");
/** `POST /v1/images/{image_id}/modulate`. */
export const modulateImage = single("modulate");
/** `POST /v1/images/{image_id}/blur`. */
export const blurImage = single("blur");
/** `POST /v1/images/{image_id}/watermark`. */
export const watermarkImage = single("watermark");
