import type { AutoQualityTarget } from "../auto-quality.js";
import { ErrorCodes, validationError } from "../errors.js";
import { FILE_EXTENSIONS, type ImageFormat, type ImageRecord } from "../image.js";
import { outputPixelsIssue } from "../limits.js";
import { BLACK } from "../transforms/color.js";
import { type Size, stepOutputSize } from "../transforms/plan.js";
import type { OutputOptions, TransformStep } from "../transforms/steps.js";
import type { PipelineContext } from "./context.js";
import { autoQualityTarget } from "./quality-levels.js";
import { type AutoFormats, autoFormats, extensionFormat, originalAcceptable } from "./variant-format.js";
import type { ResolvedDeliveryOptions } from "./variant-options.js";
import type { ResolvedVariantUrl } from "./variant-request.js";
import { variantSteps } from "./variant-steps.js";
import { cacheToken, canonicalModifiers, sizeToken, tokenKey } from "./variant-url.js";

/**
 * Part of every variant's cache key: changed when one URL comes to mean other bytes (no upscaling
 * without `enlarge_1`, never larger than the original), so variants cached by older rules are
 * computed again rather than served.
 */
const VARIANT_RULES = "rules-2";

/** One encoding a variant may be: a format, its quality and the steps for it. */
export interface VariantCandidate {
  format: ImageFormat;
  /** The quality, or with `autoQuality` the first one the search measures. */
  quality: number;
  /** `q_auto`: the codec chooses the quality for this SSIM target. */
  autoQuality?: AutoQualityTarget;
  steps: TransformStep[];
}

/** The codec's output options of a candidate. */
export function candidateOutput(candidate: VariantCandidate): OutputOptions {
  const { format, quality, autoQuality } = candidate;
  return { format, quality, flattenBackground: BLACK, ...(autoQuality === undefined ? {} : { autoQuality }) };
}

/** A candidate as its cache key spells it: `avif@64`, or `avif@auto0.985` for an automatic quality. */
function spell(candidate: VariantCandidate): string {
  const { format, quality, autoQuality } = candidate;
  return autoQuality === undefined ? `${format}@${quality}` : `${format}@auto${autoQuality.ssim}`;
}

/** What a variant is made of: the encodings to try, and the identity its cache key hashes. */
export interface VariantPlan {
  /** Each is encoded once and the smallest kept: one for an explicit format, AVIF and WebP for `auto`. */
  candidates: VariantCandidate[];
  /**
   * `auto`'s fallback (the source's own format, for browsers that take nothing newer): encoded
   * only when no candidate could be made or the smallest is larger than `predictedBytes`.
   */
  fallback?: VariantCandidate & { predictedBytes: number };
  /** The stored original answers instead when the encoding would be larger. */
  orOriginal: boolean;
  /** `auto` chose the format from `Accept` (the answer varies by it). */
  auto: boolean;
  identity: string;
  /** The file extension of the cache key: the format's, or `auto` (the format is known once made). */
  keyExtension: string;
}

/** Plans the variant `url` asks of `record`, refusing what can never be made (422). */
export function planVariant(
  context: PipelineContext,
  options: ResolvedDeliveryOptions,
  url: Omit<ResolvedVariantUrl, "imageId">,
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
  const tooLarge = (format: ImageFormat) => outputPixelsIssue(context.limits, format, finalSize, sizeField);
  /** A candidate of `format`, refused with a 422 when it can never be made. */
  const candidate = (format: ImageFormat): VariantCandidate => {
    if (!context.codec.capabilities.outputFormats.includes(format)) {
      throw validationError([{ path: file, message: `${format} is not written by this server's codec` }]);
    }
    const issue = tooLarge(format);
    if (issue !== null) throw validationError([issue], ErrorCodes.OUTPUT_TOO_LARGE);
    const quality = modifiers.q ?? options.defaultQuality[format];
    const steps = variantSteps(modifiers, record, format, context.limits.maxOutputSide);
    const auto =
      modifiers.autoQuality === undefined
        ? undefined
        : autoQualityTarget(context.codec, format, modifiers.autoQuality);
    return { format, quality, steps, ...(auto === undefined ? {} : { autoQuality: auto }) };
  };
  let plan: Pick<VariantPlan, "candidates" | "fallback" | "auto">;
  let output: string;
  if (ext === "auto") {
    const formats = autoFormats(accept, record, context, (format) => tooLarge(format) === null);
    plan = { ...autoCandidates(formats, candidate, record, finalSize), auto: true };
    // Keyed by what it may choose among (one Accept class), not by the Accept header itself.
    output = `auto:${plan.candidates.map(spell).join("+")}/${plan.fallback === undefined ? "" : spell(plan.fallback)}`;
  } else {
    const only = candidate(extensionFormat(ext));
    plan = { candidates: [only], auto: false };
    output =
      only.autoQuality === undefined ? `${only.format}|${only.quality}` : `${only.format}|${spell(only)}`;
  }
  // A variant that changes only the format or quality never costs more bytes than the original
  // it came from, when the original is one the request accepts (so it is part of the key).
  const steps = (plan.candidates[0] ?? plan.fallback)?.steps ?? [];
  const orOriginal = steps.length === 0 && originalAcceptable(ext, accept, record);
  const withoutExpiry = canonicalModifiers(
    tokens.filter((token) => tokenKey(token) !== "exp").map(cacheToken),
  );
  // A preset is keyed by what it expands to: redefining it makes new variants, not old ones.
  const preset = modifiers.p === undefined ? "" : `|p=${options.presets[modifiers.p]}`;
  const hinted = url.hintedWidth === undefined ? "" : `|w=${url.hintedWidth}`;
  return {
    ...plan,
    orOriginal,
    identity: `${withoutExpiry}${preset}${hinted}|${output}|${VARIANT_RULES}${orOriginal ? "|or-original" : ""}`,
    keyExtension: plan.auto ? "auto" : FILE_EXTENSIONS[plan.candidates[0]!.format],
  };
}

/**
 * `auto`'s encodings: every modern format, and the fallback unless it cannot be made beside them
 * (alone, its refusal is the answer, as for an explicit format). The fallback's bytes are
 * predicted from the source's own when it is the source's format (its bytes per pixel at the
 * output's size), so a fallback that would hardly be smaller than AVIF or WebP is not encoded.
 */
function autoCandidates(
  formats: AutoFormats,
  candidate: (format: ImageFormat) => VariantCandidate,
  record: ImageRecord,
  finalSize: Size,
): Pick<VariantPlan, "candidates" | "fallback"> {
  const candidates = formats.modern.map(candidate);
  if (formats.fallback === undefined) return { candidates };
  let fallback: VariantCandidate;
  try {
    fallback = candidate(formats.fallback);
  } catch (error) {
    if (candidates.length === 0) throw error;
    return { candidates };
  }
  const scale = (finalSize.width * finalSize.height) / (record.width * record.height);
  const predictedBytes = fallback.format === record.format ? Math.round(record.size * scale) : 0;
  return { candidates, fallback: { ...fallback, predictedBytes } };
}
