import type { z } from "zod";
import { ErrorCodes, type ValidationIssue, validationError } from "../errors.js";
import { formatHasAlpha, type Image, type ImageFormat, type ImageRecord } from "../image.js";
import {
  blurSchema,
  convertSchema,
  cropSchema,
  imagePathSchema,
  mirrorSchema,
  modulateSchema,
  parseAll,
  resizeSchema,
  rotateSchema,
  watermarkSchema,
} from "../schemas.js";
import { BLACK, parseColor, TRANSPARENT } from "../transforms/color.js";
import { blurSteps, planOutputSize } from "../transforms/plan.js";
import type { OverlayLayer, TransformStep } from "../transforms/steps.js";
import {
  assertCodecSupports,
  type Caller,
  internalCodecError,
  loadImageBytes,
  loadOwnedImage,
  type PipelineContext,
  producedImageSteps,
  storeNewImage,
  withMemory,
} from "./context.js";

/** Input of every transform: the source image id (path) and the JSON body. */
export interface TransformInput {
  imageId: unknown;
  body: unknown;
  /**
   * The caller gave up (e.g. the client disconnected). A job still waiting for a slot of the work
   * gate is dropped; codec work, short and bounded, runs to its end once started.
   */
  signal?: AbortSignal;
}

/** What a transform turns its validated body into. */
interface TransformPlan {
  steps: TransformStep[];
  format: ImageFormat;
  quality: number;
  name: string | undefined;
  /** Request field blamed when a step's output is too large. */
  sizeField: string;
}

type PlanBuilder<S extends z.ZodType> = (
  body: z.output<S>,
  source: ImageRecord,
  context: PipelineContext,
  caller: Caller,
) => Promise<TransformPlan> | TransformPlan;

/**
 * The one runner of every transform: validate path and body together (every failing field in one
 * 422), load the caller's source image, build the steps, check the planned output size before any
 * decode, run all steps in one decode/encode, and store the result as a new image.
 */
async function runTransform<S extends z.ZodType>(
  context: PipelineContext,
  caller: Caller,
  input: TransformInput,
  schema: S,
  build: PlanBuilder<S>,
): Promise<Image> {
  const [{ image_id }, body] = parseAll([
    [imagePathSchema, { image_id: input.imageId }],
    [schema, input.body === undefined ? {} : input.body],
  ] as const);
  const source = await loadOwnedImage(context, caller, image_id);
  const plan = await build(body, source, context, caller);
  // Only a derived dimension (resize with one side given) or a rotation can exceed the limit:
  // request fields are bounded by the schemas, so the plan names the field the caller sent.
  const finalSize = planOutputSize(plan.steps, source, context.limits.maxOutputSide, () => plan.sizeField);
  const steps = [...plan.steps, ...producedImageSteps(context, caller, finalSize)];
  assertCodecSupports(context, steps, plan.format);
  const encoded = await withMemory(
    context,
    { input: source, steps, field: plan.sizeField, signal: input.signal },
    async () => {
      const bytes = await loadImageBytes(context, source);
      try {
        return await context.codec.transform({
          input: bytes,
          steps,
          output: { format: plan.format, quality: plan.quality, flattenBackground: BLACK },
          limits: { maxInputPixels: context.limits.maxInputPixels, timeoutMs: context.limits.maxJobMs },
        });
      } catch (error) {
        throw internalCodecError(error, source.format);
      }
    },
  );
  return storeNewImage(context, caller, encoded, plan.name ?? source.name);
}

const sameFormat = (source: ImageRecord, context: PipelineContext) => ({
  format: source.format,
  quality: context.encodeQuality,
});

/** `POST /v1/images/{image_id}/mirror`. */
export function mirrorImage(context: PipelineContext, caller: Caller, input: TransformInput): Promise<Image> {
  return runTransform(context, caller, input, mirrorSchema, (body, source) => ({
    steps: [{ type: "mirror", mode: body.mode }],
    ...sameFormat(source, context),
    name: body.name,
    sizeField: "mode",
  }));
}

/** `POST /v1/images/{image_id}/convert`: re-encodes to `format` (`jpg` is `jpeg`) at `quality`. */
export function convertImage(
  context: PipelineContext,
  caller: Caller,
  input: TransformInput,
): Promise<Image> {
  return runTransform(context, caller, input, convertSchema, (body) => ({
    steps: [],
    format: body.format,
    quality: body.quality,
    name: body.name,
    sizeField: "format",
  }));
}

/**
 * `POST /v1/images/{image_id}/resize`. With one dimension the other follows the aspect ratio
 * (and `fit` is irrelevant). The letterbox defaults to transparent on png/webp and black on jpeg;
 * `transparent` on jpeg becomes black.
 */
export function resizeImage(context: PipelineContext, caller: Caller, input: TransformInput): Promise<Image> {
  return runTransform(context, caller, input, resizeSchema, (body, source) => {
    const width = body.width ?? Math.max(1, Math.round((source.width * body.height!) / source.height));
    const height = body.height ?? Math.max(1, Math.round((source.height * body.width!) / source.width));
    const requested = body.letterbox_color === undefined ? null : parseColor(body.letterbox_color);
    const background = formatHasAlpha(source.format)
      ? (requested ?? TRANSPARENT)
      : { ...(requested ?? BLACK), alpha: 1 };
    const bothGiven = body.width !== undefined && body.height !== undefined;
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
      ...sameFormat(source, context),
      name: body.name,
      sizeField: body.width === undefined ? "height" : "width",
    };
  });
}

/** `POST /v1/images/{image_id}/crop`: `x2`/`y2` exclusive; the box must lie inside the image. */
export function cropImage(context: PipelineContext, caller: Caller, input: TransformInput): Promise<Image> {
  return runTransform(context, caller, input, cropSchema, (body, source) => {
    const issues: ValidationIssue[] = [];
    if (body.x2 <= body.x1) issues.push({ path: "x2", message: `must be greater than x1 (${body.x1})` });
    if (body.y2 <= body.y1) issues.push({ path: "y2", message: `must be greater than y1 (${body.y1})` });
    if (body.x2 > source.width)
      issues.push({ path: "x2", message: `must be at most the image width (${source.width})` });
    if (body.y2 > source.height) {
      issues.push({ path: "y2", message: `must be at most the image height (${source.height})` });
    }
    if (issues.length > 0) throw validationError(issues);
    return {
      steps: [
        { type: "crop", left: body.x1, top: body.y1, width: body.x2 - body.x1, height: body.y2 - body.y1 },
      ],
      ...sameFormat(source, context),
      name: body.name,
      sizeField: "x2",
    };
  });
}

/** `POST /v1/images/{image_id}/rotate`: clockwise; the canvas grows; corners get `background_color`. */
export function rotateImage(context: PipelineContext, caller: Caller, input: TransformInput): Promise<Image> {
  return runTransform(context, caller, input, rotateSchema, (body, source) => {
    // Reduce in the caller's unit first: converting a huge radian angle (1e306) to degrees would
    // overflow to Infinity and turn the angle into NaN.
    const degrees =
      body.unit === "radians" ? ((body.angle % (2 * Math.PI)) * 180) / Math.PI : body.angle % 360;
    const angle = ((degrees % 360) + 360) % 360;
    const requested = body.background_color === undefined ? BLACK : parseColor(body.background_color)!;
    const background = formatHasAlpha(source.format) ? requested : { ...requested, alpha: 1 };
    return {
      steps: [{ type: "rotate", angle: Math.round(angle * 1e6) / 1e6, background }],
      ...sameFormat(source, context),
      name: body.name,
      sizeField: "angle",
    };
  });
}

/** `POST /v1/images/{image_id}/modulate` (contract P3 semantics, see `ModulateStep`). */
export function modulateImage(
  context: PipelineContext,
  caller: Caller,
  input: TransformInput,
): Promise<Image> {
  return runTransform(context, caller, input, modulateSchema, (body, source) => ({
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
    ...sameFormat(source, context),
    name: body.name,
    sizeField: "body",
  }));
}

/** `POST /v1/images/{image_id}/blur`: Gaussian, `sigma` 1..1000, default 20. */
export function blurImage(context: PipelineContext, caller: Caller, input: TransformInput): Promise<Image> {
  return runTransform(context, caller, input, blurSchema, (body, source) => ({
    // A large sigma runs on a reduced copy at the same visual result (see blurSteps).
    steps: blurSteps(body.sigma, source),
    ...sameFormat(source, context),
    name: body.name,
    sizeField: "sigma",
  }));
}

/**
 * `POST /v1/images/{image_id}/watermark`: draws other images of the caller over the base, in array
 * order (contract P4). Offsets may be negative (overlays are clipped); with one of width/height the
 * overlay keeps its aspect ratio. An unknown overlay id is a 404 naming that id.
 */
export function watermarkImage(
  context: PipelineContext,
  caller: Caller,
  input: TransformInput,
): Promise<Image> {
  return runTransform(context, caller, input, watermarkSchema, async (body, source) => {
    const layers: OverlayLayer[] = [];
    const issues: ValidationIssue[] = [];
    for (const [index, entry] of body.watermarks.entries()) {
      const overlay = await loadOwnedImage(context, caller, entry.id);
      const width =
        entry.width ??
        (entry.height === undefined
          ? overlay.width
          : Math.max(1, Math.round((overlay.width * entry.height) / overlay.height)));
      const height =
        entry.height ??
        (entry.width === undefined
          ? overlay.height
          : Math.max(1, Math.round((overlay.height * entry.width) / overlay.width)));
      if (width > context.limits.maxOutputSide || height > context.limits.maxOutputSide) {
        issues.push({
          path: `watermarks.${index}`,
          message: `must be at most ${context.limits.maxOutputSide} x ${context.limits.maxOutputSide} pixels (would be ${width} x ${height})`,
        });
        continue;
      }
      layers.push({
        input: await loadImageBytes(context, overlay),
        left: Math.round(entry.left),
        top: Math.round(entry.top),
        width,
        height,
        repeat: entry.repetition_mode,
        opacity: 1,
      });
    }
    if (issues.length > 0) throw validationError(issues, ErrorCodes.OUTPUT_TOO_LARGE);
    return {
      steps: [{ type: "overlay", layers }],
      ...sameFormat(source, context),
      name: body.name,
      sizeField: "watermarks",
    };
  });
}
