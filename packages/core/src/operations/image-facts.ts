import type { ImageFacts, ImageRecord } from "../image.js";
import type { ImageSample } from "../ports/image-codec.js";
import type { Caller, PipelineContext } from "./context.js";
import { loadImageBytes, loadOwnedImage, withMemory } from "./context.js";

/**
 * Side of the sample the facts are computed from. ThumbHash takes at most 100 x 100 and keeps only
 * low frequencies, so 32 px lose nothing visible; BlurHash costs grow with the pixels (17 ms on
 * the event loop for 100 x 67, under 2 ms for 32 x 21), and every new image pays it.
 */
export const SAMPLE_SIDE = 32;

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

/**
 * Computes the facts of new images in the background, one at a time, only while the node runs no
 * image job and no other billable operation (`busy()` false; the pipeline also counts the first
 * 250 ms after one ended as busy, and an embedded OCR or segmentation model works on this node's
 * CPU too): a new image costs its caller nothing more, and paying work is never
 * slowed (a 32 px decode plus ThumbHash and BlurHash, about 6 ms of CPU, was 17 % of a resize's
 * cost in bench/resize-throughput.mjs). At most `limit` images wait; past that the oldest are left to
 * their first metadata request, which computes and stores them the same way.
 */
export function createFactsScheduler(
  context: PipelineContext,
  busy: () => boolean,
  limit = 1000,
): { schedule(record: ImageRecord): void; stop(): Promise<void> } {
  const pending: string[] = [];
  let running: Promise<void> | undefined;
  let stopped = false;
  // Pauses never keep the process alive (unref'd timers), so `stop()` ends them itself: a stop
  // awaiting a pause that only an unref'd timer would end lets the event loop run dry, and the
  // process exits in the middle of its shutdown (what a server did whose embedded OCR ran as
  // idle, unref'd child processes).
  const sleepers = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      (timer as { unref?: () => void }).unref?.();
      sleepers.add(wake);
    });
  const run = async () => {
    while (pending.length > 0) {
      if (busy()) {
        await pause(50);
        continue;
      }
      const id = pending.shift()!;
      try {
        const record = await context.images.get(id);
        if (record === null || record.facts !== undefined) continue;
        // A background read: a caching store does not count it as a use of the image.
        const bytes = await context.blobStore.get(record.blobKey, { background: true });
        if (bytes === null) continue;
        // Decoding the image for its sample is a job of the memory budget like any other: bounded
        // with the paying jobs, and a large one is followed by the budget's release of free memory.
        const facts = await withMemory(
          context,
          { input: record, steps: [], field: "image", frames: record.frames },
          () => computeImageFacts(context, bytes, record.frames ?? 1),
        );
        if (facts !== undefined) await context.images.update(id, { facts });
      } catch (error) {
        context.logger.warn?.("could not compute the facts of an image", { id, error: String(error) });
      }
    }
  };
  const start = (): void => {
    running ??= pause(0)
      .then(run)
      .finally(() => {
        running = undefined;
        if (pending.length > 0) start();
      });
  };
  return {
    schedule(record) {
      if (stopped || context.codec.sample === undefined) return;
      pending.push(record.id);
      if (pending.length > limit) pending.shift();
      start();
    },
    async stop() {
      stopped = true;
      pending.length = 0;
      for (const wake of [...sleepers]) wake();
      await running;
    },
  };
}
