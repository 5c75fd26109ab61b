import type { z } from "zod";
import type { Image, ImageFormat, ImageRecord } from "../image.js";
import type {
  blurSchema,
  convertSchema,
  cropSchema,
  mirrorSchema,
  modulateSchema,
  resizeSchema,
  rotateSchema,
  TransformStepOp,
  transformSchema,
  watermarkSchema,
} from "../schemas.js";
import { planOutputSize } from "../transforms/plan.js";
import {
  assertCodecSupports,
  type Caller,
  loadOwnedImage,
  type PipelineContext,
  producedImageSteps,
  runCodec,
  storeNewImage,
} from "./context.js";
import { type Cancellable, type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";
import { type ParsedStep, parseTransformBody } from "./transform-body.js";
import {
  assertAnimationKept,
  assertOutputPixels,
  buildSteps,
  convertQuality,
  type Plan,
  planOutput,
} from "./transform-plan.js";
import { OPERATIONS, type OperationEntry } from "./transform-steps.js";

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
    output: planOutput(plan),
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
      ...convertQuality(context, built.format ?? source.format, built.quality ?? context.encodeQuality),
    },
    (body as { name?: string }).name,
    input.signal,
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
