import type { z } from "zod";
import type { AutoQualityTarget } from "../auto-quality.js";
import { ErrorCodes, ImagePipelineError, isImagePipelineError, validationError } from "../errors.js";
import { ANIMATED_FORMATS, type ImageFormat, type ImageRecord } from "../image.js";
import { type Limits, outputPixelsIssue } from "../limits.js";
import { BLACK } from "../transforms/color.js";
import { type Size, stepOutputSize } from "../transforms/plan.js";
import type { OutputOptions, TransformStep } from "../transforms/steps.js";
import type { PipelineContext } from "./context.js";
import { autoQualityTarget } from "./quality-levels.js";
import type { ParsedStep } from "./transform-body.js";
import {
  type BuildContext,
  type BuiltStep,
  type Current,
  OPERATIONS,
  type OperationEntry,
} from "./transform-steps.js";
import { DEFAULT_DELIVERY_QUALITY } from "./variant-options.js";

/**
 * An animation written to an animated format the codec cannot animate would silently lose its
 * frames: refused with `UNSUPPORTED_OPERATION` (still formats keep the first frame, as documented).
 */
export function assertAnimationKept(
  context: PipelineContext,
  source: ImageRecord,
  output: ImageFormat,
): void {
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
export function assertOutputPixels(
  limits: Pick<Limits, "maxOutputPixels">,
  plan: Plan,
  finalSize: Size,
): void {
  const sizing = plan.steps.findLastIndex(
    (step) => step.type === "resize" || step.type === "rotate" || step.type === "crop",
  );
  const field = (sizing >= 0 ? plan.fields[sizing] : undefined) ?? "format";
  const issue = outputPixelsIssue(limits, plan.format, finalSize, field);
  if (issue !== null) throw validationError([issue], ErrorCodes.OUTPUT_TOO_LARGE);
}

/** A plan ready for the codec: steps in order, the output and the field blamed per step. */
export interface Plan {
  steps: TransformStep[];
  fields: string[];
  format: ImageFormat;
  quality: number;
  /** `quality: "auto"`: the codec chooses the quality for this target (`quality` is its first guess). */
  autoQuality?: AutoQualityTarget;
}

/** The codec's output options of a plan. */
export function planOutput(plan: Pick<Plan, "format" | "quality" | "autoQuality">): OutputOptions {
  const { format, quality, autoQuality } = plan;
  return { format, quality, flattenBackground: BLACK, ...(autoQuality === undefined ? {} : { autoQuality }) };
}

/**
 * The quality of a `convert`: the one asked, or for `"auto"` the `good` level's target with the
 * format's delivery default as the first guess (and the quality when the codec cannot choose).
 */
export function convertQuality(
  context: Pick<PipelineContext, "codec">,
  format: ImageFormat,
  quality: number | "auto",
): Pick<Plan, "quality" | "autoQuality"> {
  if (quality !== "auto") return { quality };
  const autoQuality = autoQualityTarget(context.codec, format, "good");
  return { quality: DEFAULT_DELIVERY_QUALITY[format], ...(autoQuality === undefined ? {} : { autoQuality }) };
}

/** Builds every step of a fused transform against the image the previous steps produce. */
export async function buildSteps(
  parsed: readonly ParsedStep[],
  start: Current,
  build: Omit<BuildContext, "output">,
  sourceFormat: ImageFormat,
): Promise<Plan> {
  // The output is known before any step is built: the last convert's format, else the source's.
  let format = sourceFormat;
  let quality: number | "auto" = build.context.encodeQuality;
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
  return { steps, fields, format, ...convertQuality(build.context, format, quality) };
}

/** A step's validation error with its paths under `steps.<index>.`. */
function prefixIssues(error: unknown, index: number): unknown {
  if (!isImagePipelineError(error) || error.issues.length === 0) return error;
  return validationError(
    error.issues.map((issue) => ({ ...issue, path: `steps.${index}.${issue.path}` })),
    error.code,
  );
}
