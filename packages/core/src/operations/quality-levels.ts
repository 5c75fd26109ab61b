import type { AutoQualityTarget } from "../auto-quality.js";
import type { ImageFormat } from "../image.js";
import type { ImageCodec } from "../ports/image-codec.js";

/*
 * The levels of automatic quality (`q_auto:{level}` in variant URLs, `quality: "auto"` in the
 * stored-image API) and the SSIM target of each per format.
 */

export const AUTO_QUALITY_LEVELS = ["good", "best", "eco"] as const;
/** `good` (the default of `q_auto`), `best` (closer to the source), `eco` (fewer bytes). */
export type AutoQualityLevel = (typeof AUTO_QUALITY_LEVELS)[number];

/** The SSIM of each level per lossy format (see docs/delivery.md for their calibration). */
export type AutoQualityTargets = Record<AutoQualityLevel, Partial<Record<ImageFormat, number>>>;

/**
 * The SSIM targets (ssim.js's mean SSIM against the rendered pixels at the output's size), per
 * level and format, calibrated on the photo corpus of bench/bytes.mjs: `good` keeps about the
 * median SSIM each format has at its default quality, spending fewer bytes on the pictures the
 * fixed quality over-serves; `best` and `eco` are a step above and below it.
 */
export const AUTO_QUALITY_TARGETS: AutoQualityTargets = {
  good: { jpeg: 0.9845, webp: 0.986, avif: 0.9805 },
  best: { jpeg: 0.99, webp: 0.99, avif: 0.987 },
  eco: { jpeg: 0.977, webp: 0.978, avif: 0.973 },
};

/** The qualities the search may answer, per format: below, artefacts show whatever SSIM says. */
const RANGES: Partial<Record<ImageFormat, { min: number; max: number }>> = {
  jpeg: { min: 30, max: 95 },
  webp: { min: 30, max: 95 },
  avif: { min: 20, max: 90 },
};

/**
 * The automatic quality of `format` at `level` for the codec: the SSIM target and the range to
 * search, or `undefined` when the codec cannot choose that format's quality (or it is lossless),
 * which then takes its default quality.
 */
export function autoQualityTarget(
  codec: Pick<ImageCodec, "capabilities">,
  format: ImageFormat,
  level: AutoQualityLevel,
  targets: AutoQualityTargets = AUTO_QUALITY_TARGETS,
): AutoQualityTarget | undefined {
  const ssim = targets[level][format];
  const range = RANGES[format];
  if (ssim === undefined || range === undefined || !(codec.capabilities.autoQuality ?? []).includes(format)) {
    return undefined;
  }
  return { ssim, ...range };
}
