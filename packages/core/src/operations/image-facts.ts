import type { ImageFacts, ImageRecord } from "../image.js";
import type { ImageSample } from "../ports/image-codec.js";
import type { Caller, PipelineContext } from "./context.js";
import { loadImageBytes, loadOwnedImage } from "./context.js";

/** Side of the sample the facts are computed from (ThumbHash takes at most 100 x 100). */
export const SAMPLE_SIDE = 100;

/** `GET /v1/images/{image_id}/metadata`: the Image's size and format plus its facts. */
export interface ImageMetadata {
  id: string;
  width: number;
  height: number;
  format: ImageRecord["format"];
  size: number;
  has_alpha: boolean;
  frames: number;
  /** `#rrggbb`, or `null` when the pipeline's codec cannot sample images. */
  dominant_color: string | null;
  thumbhash: string | null;
  blurhash: string | null;
}

/**
 * Computes an image's facts from its encoded bytes: one reduced decode of the first frame through
 * the codec's `sample`, the dominant colour here, the hashes through the placeholder encoder.
 * `undefined` when the codec cannot sample.
 */
export async function computeImageFacts(
  context: PipelineContext,
  bytes: Uint8Array,
  frames: number,
): Promise<ImageFacts | undefined> {
  const { codec } = context;
  if (codec.sample === undefined) return undefined;
  const sample = await codec.sample(bytes, SAMPLE_SIDE, {
    maxInputPixels: context.limits.maxInputPixels,
    timeoutMs: context.limits.maxJobMs,
  });
  const placeholders = context.placeholders;
  return {
    hasAlpha: sample.hasAlpha,
    frames: Math.max(frames, sample.frames),
    dominantColor: dominantColor(sample),
    thumbhash: placeholders === undefined ? null : placeholders.thumbhash(sample),
    blurhash: placeholders?.blurhash === undefined ? null : placeholders.blurhash(sample),
  };
}

/**
 * The most common colour of a sample: pixels are counted in 4-bit-per-channel buckets weighted by
 * their alpha, and the fullest bucket's mean colour is returned as `#rrggbb`. A fully transparent
 * sample is `#000000`.
 */
export function dominantColor(sample: Pick<ImageSample, "data" | "width" | "height">): string {
  const weights = new Float64Array(4096);
  const sums = new Float64Array(4096 * 3);
  const { data } = sample;
  for (let offset = 0; offset + 3 < data.length; offset += 4) {
    const alpha = data[offset + 3]! / 255;
    if (alpha === 0) continue;
    const r = data[offset]!;
    const g = data[offset + 1]!;
    const b = data[offset + 2]!;
    const bucket = ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
    weights[bucket] = weights[bucket]! + alpha;
    sums[bucket * 3] = sums[bucket * 3]! + r * alpha;
    sums[bucket * 3 + 1] = sums[bucket * 3 + 1]! + g * alpha;
    sums[bucket * 3 + 2] = sums[bucket * 3 + 2]! + b * alpha;
  }
  let best = -1;
  for (let bucket = 0; bucket < 4096; bucket += 1) {
    if (weights[bucket]! > 0 && (best === -1 || weights[bucket]! > weights[best]!)) best = bucket;
  }
  if (best === -1) return "#000000";
  const hex = (sum: number) =>
    Math.min(255, Math.max(0, Math.round(sum / weights[best]!)))
      .toString(16)
      .padStart(2, "0");
  return `#${hex(sums[best * 3]!)}${hex(sums[best * 3 + 1]!)}${hex(sums[best * 3 + 2]!)}`;
}

/**
 * `GET /v1/images/{image_id}/metadata`. Same ownership rules as get; not billed. Facts stored with
 * the record are answered without decoding; a record made before facts existed gets them computed
 * once and stored.
 */
export async function getImageMetadata(
  context: PipelineContext,
  caller: Caller,
  imageId: string,
): Promise<ImageMetadata> {
  let record = await loadOwnedImage(context, caller, imageId);
  let facts = record.facts;
  if (facts === undefined) {
    const bytes = await loadImageBytes(context, record);
    facts = await computeImageFacts(context, bytes, record.frames ?? 1);
    if (facts !== undefined) {
      record = (await context.images.update(record.id, { facts })) ?? record;
    }
  }
  return {
    id: record.id,
    width: record.width,
    height: record.height,
    format: record.format,
    size: record.size,
    has_alpha: facts?.hasAlpha ?? false,
    frames: facts?.frames ?? record.frames ?? 1,
    dominant_color: facts?.dominantColor ?? null,
    thumbhash: facts?.thumbhash ?? null,
    blurhash: facts?.blurhash ?? null,
  };
}
