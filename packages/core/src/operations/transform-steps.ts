import type { z } from "zod";
import { ErrorCodes, ImagePipelineError, type ValidationIssue, validationError } from "../errors.js";
import { formatHasAlpha, type ImageFormat } from "../image.js";
import {
  blurSchema,
  convertSchema,
  cropSchema,
  mirrorSchema,
  modulateSchema,
  resizeSchema,
  rotateSchema,
  watermarkSchema,
} from "../schemas.js";
import { BLACK, parseColor, type Rgba, TRANSPARENT } from "../transforms/color.js";
import { blurSteps } from "../transforms/plan.js";
import type { OverlayLayer, TransformStep } from "../transforms/steps.js";
import { type Caller, loadImageBytes, loadOwnedImage, type PipelineContext } from "./context.js";

/*
 * The step builders of the transforms, one per operation: its body's schema and how the validated
 * body becomes codec steps on the current image. Single operations and the steps of a fused
 * transform are built by the same entries.
 */

/** The image a step is built against: the source, or what the previous steps made of it. */
export interface Current {
  width: number;
  height: number;
}

/** What one operation's validated body turns into. */
export interface BuiltStep {
  steps: TransformStep[];
  /** `convert` only: the output format and quality (`auto`: chosen per image, see `Plan`). */
  format?: ImageFormat;
  quality?: number | "auto";
  /** Request field blamed when a step's output is too large. */
  sizeField: string;
}

/** Everything a builder may need besides its body. */
export interface BuildContext {
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

export interface OperationEntry<S extends z.ZodType> {
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
export const OPERATIONS = {
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
