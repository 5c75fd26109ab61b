import { ErrorCodes, isImagePipelineError, validationError } from "../errors.js";
import { DEFAULT_LIMITS, type Limits } from "../limits.js";
import type { EncodedImage, ImageCodec } from "../ports/image-codec.js";
import type { TransformStepInput } from "../schemas.js";
import { planOutputSize } from "../transforms/plan.js";
import { type Caller, type PipelineContext, probeInput, processingTimeout } from "./context.js";
import { parseTransformBody } from "./transform-body.js";
import { assertOutputPixels, buildSteps, planOutput } from "./transform-plan.js";

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
      output: planOutput(plan),
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
