import { z } from "zod";
import {
  ErrorCodes,
  ImagePipelineError,
  isImagePipelineError,
  type ValidationIssue,
  validationError,
} from "../errors.js";
import {
  ANIMATED_FORMATS,
  formatHasAlpha,
  type Image,
  type ImageFormat,
  type ImageRecord,
} from "../image.js";
import { DEFAULT_LIMITS, type Limits } from "../limits.js";
import type { EncodedImage, ImageCodec } from "../ports/image-codec.js";
import {
  blurSchema,
  convertSchema,
  cropSchema,
  formatIssues,
  MAX_TRANSFORM_STEPS,
  mirrorSchema,
  modulateSchema,
  resizeSchema,
  rotateSchema,
  TRANSFORM_STEP_OPS,
  type TransformStepInput,
  type TransformStepOp,
  transformSchema,
  watermarkSchema,
} from "../schemas.js";
import { BLACK, parseColor, type Rgba, TRANSPARENT } from "../transforms/color.js";
import { blurSteps, planOutputSize, stepOutputSize } from "../transforms/plan.js";
import type { OverlayLayer, TransformStep } from "../transforms/steps.js";
import {
  assertCodecSupports,
  type Caller,
  loadImageBytes,
  loadOwnedImage,
  type PipelineContext,
  probeInput,
  processingTimeout,
  producedImageSteps,
  runCodec,
  storeNewImage,
} from "./context.js";
import { type Cancellable, type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";

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

/** The image a step is built against: the source, or what the previous steps made of it. */
interface Current {
  width: number;
  height: number;
}

/** What one operation's validated body turns into. */
interface BuiltStep {
  steps: TransformStep[];
  /** `convert` only: the output format and quality. */
  format?: ImageFormat;
  quality?: number;
  /** Request field blamed when a step's output is too large. */
  sizeField: string;
}

/** Everything a builder may need besides its body. */
interface BuildContext {
  context: PipelineContext;
  caller: Caller;
  /** The format the result is encoded to (backgrounds are opaque for jpeg). */
  output: ImageFormat;
}

type StepBuilder<S extends z.ZodType> = (
  body: z.output<S>,
  current: Current,
  build: BuildContext,
) => Promise<BuiltStep> | BuiltStep;

interface OperationEntry<S extends z.ZodType> {
  schema: S;
  build: StepBuilder<S>;
}

const entry = <S extends z.ZodType>(schema: S, build: StepBuilder<S>): OperationEntry<S> => ({
  schema,
  build,
});

/**
 * The transform operations, one entry each: the schema of its body and how the validated body
 * becomes codec steps on the current image. The single operations (`POST .../resize`) and the steps
 * of a fused transform (`POST .../transform`) are built by the same entries, so they share fields,
 * bounds, defaults and messages.
 */
const OPERATIONS = {
  mirror: entry(mirrorSchema, (body) => ({
    steps: [{ type: "mirror", mode: body.mode }],
    sizeField: "mode",
  })),
  convert: entry(convertSchema, (body) => ({
    steps: [],
    format: body.format,
    quality: body.quality,
    sizeField: "format",
  })),
  /**
   * With one dimension the other follows the aspect ratio (and `fit` is irrelevant). The letterbox
   * defaults to transparent on png/webp and black on jpeg; a colour with transparency on a jpeg output is a 422.
   */
  resize: entry(resizeSchema, (body, current, { output, context }) => {
    const width = body.width ?? Math.max(1, Math.round((current.width * body.height!) / current.height));
    const height = body.height ?? Math.max(1, Math.round((current.height * body.width!) / current.width));
    const requested = body.letterbox_color === undefined ? null : parseColor(body.letterbox_color);
    assertOpaqueFor(output, "letterbox_color", requested);
    const background = formatHasAlpha(output)
      ? (requested ?? TRANSPARENT)
      : { ...(requested ?? BLACK), alpha: 1 };
    const bothGiven = body.width !== undefined && body.height !== undefined;
    if (body.position === "attention" || body.position === "entropy") {
      if (!bothGiven || body.fit !== "cover") {
        throw validationError([
          { path: "position", message: `${body.position} needs fit cover with both width and height` },
        ]);
      }
      const codec = context.codec;
      if (!(codec.capabilities.smartCrop ?? []).includes(body.position)) {
        throw new ImagePipelineError(
          ErrorCodes.UNSUPPORTED_OPERATION,
          `The ${codec.name} codec has no ${body.position} crop.`,
          {
            issues: [
              { path: "position", message: `${body.position} is not offered by the ${codec.name} codec` },
            ],
          },
        );
      }
    }
    return {
      steps: [
        {
          type: "resize",
          width,
          height,
          fit: bothGiven ? body.fit : "fill",
          position: body.position,
          background,
        },
      ],
      sizeField: body.width === undefined ? "height" : "width",
    };
  }),
  /** `x2`/`y2` exclusive; the box must lie inside the (current) image. */
  crop: entry(cropSchema, (body, current) => {
    const issues: ValidationIssue[] = [];
    if (body.x2 <= body.x1) issues.push({ path: "x2", message: `must be greater than x1 (${body.x1})` });
    if (body.y2 <= body.y1) issues.push({ path: "y2", message: `must be greater than y1 (${body.y1})` });
    if (body.x2 > current.width)
      issues.push({ path: "x2", message: `must be at most the image width (${current.width})` });
    if (body.y2 > current.height) {
      issues.push({ path: "y2", message: `must be at most the image height (${current.height})` });
    }
    if (issues.length > 0) throw validationError(issues);
    return {
      steps: [
        { type: "crop", left: body.x1, top: body.y1, width: body.x2 - body.x1, height: body.y2 - body.y1 },
      ],
      sizeField: "x2",
    };
  }),
  /** Clockwise; the canvas grows; corners get `background_color`. */
  rotate: entry(rotateSchema, (body, _current, { output }) => {
    // Reduce in the caller's unit first: converting a huge radian angle (1e306) to degrees would
    // overflow to Infinity and turn the angle into NaN.
    const degrees =
      body.unit === "radians" ? ((body.angle % (2 * Math.PI)) * 180) / Math.PI : body.angle % 360;
    const angle = ((degrees % 360) + 360) % 360;
    const requested = body.background_color === undefined ? BLACK : parseColor(body.background_color)!;
    assertOpaqueFor(output, "background_color", requested);
    const background = formatHasAlpha(output) ? requested : { ...requested, alpha: 1 };
    return {
      steps: [{ type: "rotate", angle: Math.round(angle * 1e6) / 1e6, background }],
      sizeField: "angle",
    };
  }),
  /** Contract P3 semantics, see `ModulateStep`. */
  modulate: entry(modulateSchema, (body) => ({
    steps: [
      {
        type: "modulate",
        brightness: body.brightness ?? 0,
        saturation: body.saturation ?? 0,
        exposure: body.exposure ?? 0,
        contrast: body.contrast ?? 0,
        lightness: body.lightness ?? 0,
        hue: body.hue ?? 0,
      },
    ],
    sizeField: "body",
  })),
  /** Gaussian, `sigma` 1..1000; a large sigma runs on a reduced copy (see `blurSteps`). */
  blur: entry(blurSchema, (body, current) => ({ steps: blurSteps(body.sigma, current), sizeField: "sigma" })),
  /**
   * Draws other images of the caller over the current image, in array order (contract P4). Offsets
   * may be negative (overlays are clipped); with one of width/height the overlay keeps its aspect
   * ratio. An unknown overlay id is a 404 naming that id.
   */
  watermark: entry(watermarkSchema, async (body, _current, { context, caller }) => {
    const layers: OverlayLayer[] = [];
    const issues: ValidationIssue[] = [];
    for (const [index, mark] of body.watermarks.entries()) {
      const overlay = await loadOwnedImage(context, caller, mark.id);
      const width =
        mark.width ??
        (mark.height === undefined
          ? overlay.width
          : Math.max(1, Math.round((overlay.width * mark.height) / overlay.height)));
      const height =
        mark.height ??
        (mark.width === undefined
          ? overlay.height
          : Math.max(1, Math.round((overlay.height * mark.width) / overlay.width)));
      if (width > context.limits.maxOutputSide || height > context.limits.maxOutputSide) {
        issues.push({
          path: `watermarks.${index}`,
          message: `must be at most ${context.limits.maxOutputSide} x ${context.limits.maxOutputSide} pixels (would be ${width} x ${height})`,
        });
        continue;
      }
      layers.push({
        input: await loadImageBytes(context, overlay),
        left: Math.round(mark.left),
        top: Math.round(mark.top),
        width,
        height,
        repeat: mark.repetition_mode,
        opacity: 1,
      });
    }
    if (issues.length > 0) throw validationError(issues, ErrorCodes.OUTPUT_TOO_LARGE);
    return { steps: [{ type: "overlay", layers }], sizeField: "watermarks" };
  }),
} as const;

/**
 * A colour with transparency cannot reach a JPEG: rather than silently painting it opaque (black
 * corners where the caller asked for transparent ones), the request is refused naming the field.
 */
function assertOpaqueFor(output: ImageFormat, field: string, color: Rgba | null): void {
  if (color === null || formatHasAlpha(output) || color.alpha >= 1) return;
  throw validationError([
    {
      path: field,
      message: `must be an opaque colour for a ${output} image (${output} has no transparency): convert to png or webp first (or end a transform with a convert to one of them) to keep transparency`,
    },
  ]);
}

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
  planOutputSize(
    plan.steps,
    header,
    limits.maxOutputSide,
    (step) => plan.fields[plan.steps.indexOf(step)] ?? "steps",
  );
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
