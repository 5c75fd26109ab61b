import { ErrorCodes, validationError } from "../errors.js";
import type { ImageFormat, ImageRecord } from "../image.js";
import { outputPixelsIssue } from "../limits.js";
import { type Size, stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";
import type { PipelineContext } from "./context.js";
import { chooseFormat, originalAcceptable } from "./variant-format.js";
import type { ResolvedDeliveryOptions } from "./variant-options.js";
import type { ResolvedVariantUrl } from "./variant-request.js";
import { variantSteps } from "./variant-steps.js";
import { canonicalModifiers, sizeToken, tokenKey } from "./variant-url.js";

/**
 * Part of every variant's cache key: changed when one URL comes to mean other bytes (no upscaling
 * without `enlarge_1`, never larger than the original), so variants cached by older rules are
 * computed again rather than served.
 */
const VARIANT_RULES = "rules-2";

/** What a variant is made of: its output, its steps, and the identity its cache key hashes. */
export interface VariantPlan {
  format: ImageFormat;
  quality: number;
  steps: TransformStep[];
  /** The stored original answers instead when the encoding would be larger. */
  orOriginal: boolean;
  /** `auto` chose the format from `Accept` (the answer varies by it). */
  auto: boolean;
  identity: string;
}

/** Plans the variant `url` asks of `record`, refusing what can never be made (422). */
export function planVariant(
  context: PipelineContext,
  options: ResolvedDeliveryOptions,
  url: ResolvedVariantUrl,
  record: ImageRecord,
  accept: string | undefined,
): VariantPlan {
  const { modifiers, ext, tokens, file } = url;
  // The output's size does not depend on its format: `auto` skips a format it would exceed the
  // output limit of (a large AVIF costs far more than its WebP), an explicit one is refused.
  const finalSize = variantSteps(modifiers, record, "png", context.limits.maxOutputSide).reduce<Size>(
    (size, step) => stepOutputSize(step, size),
    record,
  );
  const sizeField = sizeToken(modifiers) ?? file;
  const fits = (candidate: ImageFormat) =>
    outputPixelsIssue(context.limits, candidate, finalSize, sizeField) === null;
  const { format, auto } = chooseFormat(ext, accept, record, context, fits);
  if (!context.codec.capabilities.outputFormats.includes(format)) {
    throw validationError([{ path: file, message: `${format} is not written by this server's codec` }]);
  }
  const tooLarge = outputPixelsIssue(context.limits, format, finalSize, sizeField);
  if (tooLarge !== null) throw validationError([tooLarge], ErrorCodes.OUTPUT_TOO_LARGE);
  const quality = modifiers.q ?? options.defaultQuality[format];
  const steps = variantSteps(modifiers, record, format, context.limits.maxOutputSide);
  const withoutExpiry = canonicalModifiers(tokens.filter((token) => tokenKey(token) !== "exp"));
  // A preset is keyed by what it expands to: redefining it makes new variants, not old ones.
  const preset = modifiers.p === undefined ? "" : `|p=${options.presets[modifiers.p]}`;
  // A variant that changes only the format or quality never costs more bytes than the original
  // it came from, when the original is one the request accepts (so it is part of the key).
  const orOriginal = steps.length === 0 && originalAcceptable(ext, accept, record);
  const identity = `${withoutExpiry}${preset}|${format}|${quality}|${VARIANT_RULES}${orOriginal ? "|or-original" : ""}`;
  return { format, quality, steps, orOriginal, auto, identity };
}
