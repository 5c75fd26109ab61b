import { z } from "zod";
import { ErrorCodes, ImagePipelineError, validationError } from "../errors.js";
import type { ImageFormat } from "../image.js";
import { type Release, Semaphore } from "../semaphore.js";
import { rotatedSize, type Size, stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";

const DEFAULT_RELEASE_AFTER_BYTES = 8 * 1024 * 1024;
const DEFAULT_RELEASE_AFTER_IDLE_MS = 100;
const DEFAULT_RELEASE_AFTER_JOB_MS = 250;

/**
 * The memory budget of one node: every image job declares the pixel memory it can peak at
 * (estimated from the header and the steps, before anything is decoded) and runs only while the
 * jobs running together stay within `maxBytes`; others wait first-come first-served up to
 * `maxWaitMs` and are then refused with `OVERLOADED` (503, Retry-After). A job that could never
 * fit is refused at once with a 422 naming the field that made it so large.
 *
 * The default, 1 GiB of pixel buffers, is sized for a 2 GB host: the rest holds Node, the codec's
 * caches, upload bodies and the allocator's slack.
 */
export const memoryBudgetOptionsSchema = z
  .object({
    /** Pixel memory of the jobs running at once, bytes. @default 1 GiB */
    maxBytes: z
      .number()
      .int()
      .min(16 * 1024 * 1024)
      .default(1024 * 1024 * 1024),
    /** Longest wait for room, ms; then 503 `OVERLOADED`. @default 10000 */
    maxWaitMs: z.number().int().min(1).max(600_000).default(10_000),
    /**
     * With a `memoryReleaser` among the pipeline's deps: when the budget has stayed empty (no job
     * running or waiting) for `releaseAfterIdleMs` after a job that reserved at least this many
     * bytes, the allocator's free memory is given back to the system. The default, 8 MiB, is a
     * job on about a megapixel: a resize of a 1920 x 1280 photo reserves 21 MB, an OCR page of 4
     * megapixels 60 MB. @default 8 MiB
     */
    releaseAfterBytes: z.number().int().min(0).default(DEFAULT_RELEASE_AFTER_BYTES),
    /**
     * How long the budget must stay empty before that release, ms. Under a steady load the budget
     * is never empty that long, so the allocator keeps its memory for the next jobs: releasing at
     * every momentary drain cost the resize load of bench/resize-throughput.mjs a third of its
     * throughput (the freed pages are faulted in again by the next job). @default 100
     */
    releaseAfterIdleMs: z.number().int().min(0).max(60_000).default(DEFAULT_RELEASE_AFTER_IDLE_MS),
    /**
     * After a job of `releaseAfterBytes` or more that held its reservation at least this long,
     * ms, the release comes as soon as the budget is empty, without waiting `releaseAfterIdleMs`:
     * the next job faults in again what it needs (a few ms for tens of MB), little beside a job
     * this long, and it no longer starts on top of what the long one left. Reading the OCR suite
     * through the prebuilt server, whose pages are uploaded and then read at once, the reading of
     * a photographed page peaked at 138 MB instead of 158 (measured with bench/ocr.mjs).
     * Short jobs (a resize: tens of ms) keep the idle wait. @default 250
     */
    releaseAfterJobMs: z.number().int().min(0).max(600_000).default(DEFAULT_RELEASE_AFTER_JOB_MS),
  })
  .strict();

export type MemoryBudgetOptions = z.input<typeof memoryBudgetOptionsSchema>;

/** Bytes per pixel of a decoded RGBA buffer (8 bits per channel). */
const BYTES_PER_PIXEL = 4;
/**
 * Working copies per materialised image. Calibrated on sharp against the campaign's measurements:
 * a 7000 x 7000 animated WebP frame measured +690 MB (estimate 686 MB), a resize of a tiny image to
 * 10000 x 10000 about 400 MB (estimate 700 MB), a 45 degree rotation of 50 MP about 350 MB
 * (estimate 1.05 GB): never below what was measured, at most 3x above.
 */
const COPIES = 1.75;

/**
 * The encoder's working set per output format, bytes per output pixel (of every frame), on top of
 * what the decode and the passes hold ({@link COPIES}). Measured by `node bench/memory.mjs`: the
 * peak RSS of each format's encode less that of a JPEG encode of the same pixels (JPEG, PNG and
 * TIFF stream their rows out; AVIF, GIF and WebP hold the whole image in the encoder's own
 * buffers: libaom's frame and reference buffers, libimagequant's histogram and the dithered
 * copy, libwebp's YUV planes and the output), rounded up. Per output pixel over JPEG at 4 and 16
 * megapixels: AVIF 16.2 and 14.5 bytes, GIF 8.8 and 5.3, WebP 4.4 and 4.1, PNG and TIFF under 1
 * (PNG's output buffer aside). The worst allowed job of each format peaked at 0.26-0.57 of this
 * estimate (a JPEG of 9511 x 9511 highest).
 */
export const ENCODER_BYTES_PER_PIXEL: Readonly<Record<ImageFormat, number>> = Object.freeze({
  jpeg: 1,
  png: 2,
  tiff: 2,
  webp: 6,
  gif: 10,
  avif: 24,
});

/**
 * What an automatic-quality search holds beside the encoder, bytes per output pixel: the output's
 * pixels outside the pipeline, the whole output decoded to be measured, its flattened reference
 * when it has alpha, and the probe (an eighth): 4 + 3 + 3 + 0.5, rounded up. Measured by
 * `node bench/memory.mjs --auto-quality`: a JPEG of 9511 x 9511 peaked 580 MB (6.4 bytes per pixel,
 * RGB) above the same encode at a fixed quality.
 */
export const AUTO_QUALITY_BYTES_PER_PIXEL = 12;

/**
 * Peak memory of a job on an input of `input` px running `steps` and encoding to `format`, before
 * anything is decoded: the input plus the largest image the steps materialise (a rotation's grown
 * canvas, a resize's output, a stage with its overlays clipped to the base they land on), times
 * the frames and {@link COPIES}, plus the encoder's working set for the final size
 * ({@link ENCODER_BYTES_PER_PIXEL}; none without `format`: a decode for facts encodes nothing), plus
 * the quality search's ({@link AUTO_QUALITY_BYTES_PER_PIXEL}) when `autoQuality`.
 */
export function estimateJobBytes(
  input: Size,
  steps: readonly TransformStep[],
  frames = 1,
  format?: ImageFormat,
  autoQuality = false,
): number {
  let size = input;
  let largest = input.width * input.height;
  for (const step of steps) {
    let stage = 0;
    if (step.type === "rotate") {
      const turned = rotatedSize(size, step.angle);
      stage = turned.width * turned.height;
    }
    if (step.type === "overlay") {
      stage = size.width * size.height;
      for (const layer of step.layers) {
        stage +=
          Math.min(Math.max(1, layer.width), size.width) * Math.min(Math.max(1, layer.height), size.height);
      }
    }
    size = stepOutputSize(step, size);
    largest = Math.max(largest, stage, size.width * size.height);
  }
  const pixels = (input.width * input.height + largest) * BYTES_PER_PIXEL * COPIES;
  const perPixel =
    format === undefined
      ? 0
      : ENCODER_BYTES_PER_PIXEL[format] + (autoQuality ? AUTO_QUALITY_BYTES_PER_PIXEL : 0);
  const encoder = size.width * size.height * perPixel;
  return Math.ceil((pixels + encoder) * frames);
}

/** See {@link memoryBudgetOptionsSchema}. */
export interface MemoryBudget {
  /**
   * Waits until `bytes` fit, then returns the release function. Rejects with a 422 on `field`
   * when `bytes` exceed the whole budget, or `OVERLOADED` after `maxWaitMs`.
   */
  reserve(bytes: number, field: string, signal?: AbortSignal): Promise<() => void>;
  /** Bytes reserved by running jobs and waiting jobs right now. */
  stats(): { reservedBytes: number; waiting: number; maxBytes: number };
}

const MB = 1024 * 1024;

/**
 * Creates the budget of {@link memoryBudgetOptionsSchema}. `onDrained` is called once the budget
 * has been empty (no job running or waiting) for `releaseAfterIdleMs`, if a job since the
 * previous call reserved at least `releaseAfterBytes`; as soon as it is empty if such a job also
 * held its reservation for `releaseAfterJobMs` or more.
 */
export function createMemoryBudget(
  options: Omit<
    z.output<typeof memoryBudgetOptionsSchema>,
    "releaseAfterBytes" | "releaseAfterIdleMs" | "releaseAfterJobMs"
  > & {
    releaseAfterBytes?: number;
    releaseAfterIdleMs?: number;
    releaseAfterJobMs?: number;
  },
  onDrained?: () => void,
): MemoryBudget {
  const releaseAfterBytes = options.releaseAfterBytes ?? DEFAULT_RELEASE_AFTER_BYTES;
  const releaseAfterIdleMs = options.releaseAfterIdleMs ?? DEFAULT_RELEASE_AFTER_IDLE_MS;
  const releaseAfterJobMs = options.releaseAfterJobMs ?? DEFAULT_RELEASE_AFTER_JOB_MS;
  // The largest reservation since `onDrained` was last called.
  let largest = 0;
  // Whether a reservation of `releaseAfterBytes` or more was held `releaseAfterJobMs` since then.
  let longJob = false;
  // Runs `onDrained` when the budget stays empty; cleared by the next reservation.
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const budget: Semaphore = new Semaphore({
    capacity: options.maxBytes,
    maxWaitMs: options.maxWaitMs,
    timedOut: () =>
      new ImagePipelineError(
        ErrorCodes.OVERLOADED,
        `The server's image memory is in use (${Math.ceil(budget.held / MB)} of ${Math.floor(options.maxBytes / MB)} MB); retry later.`,
        { retryAfterSeconds: 1 },
      ),
  });
  const drain = () => {
    idleTimer = undefined;
    largest = 0;
    longJob = false;
    onDrained?.();
  };
  /** Gives `bytes` back, then schedules the drain when the budget is left empty after a large job. */
  const released = (bytes: number, release: Release): (() => void) => {
    // When the reservation was granted (a waiting job's time in the queue does not count).
    const granted = performance.now();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
      if (bytes >= releaseAfterBytes && performance.now() - granted >= releaseAfterJobMs) longJob = true;
      if (onDrained === undefined || budget.held > 0 || budget.waiting > 0 || largest < releaseAfterBytes) {
        return;
      }
      clearTimeout(idleTimer);
      if (longJob) {
        drain();
        return;
      }
      idleTimer = setTimeout(drain, releaseAfterIdleMs);
      (idleTimer as { unref?: () => void }).unref?.();
    };
  };
  return {
    stats: () => ({ reservedBytes: budget.held, waiting: budget.waiting, maxBytes: options.maxBytes }),
    reserve(bytes, field, signal) {
      if (bytes > options.maxBytes) return Promise.reject(largerThanBudget(bytes, field, options.maxBytes));
      largest = Math.max(largest, bytes);
      clearTimeout(idleTimer);
      idleTimer = undefined;
      return budget.acquire({ units: bytes, signal }).then((release) => released(bytes, release));
    },
  };
}

/** A job that could never fit: a 422 on `field`, not a wait that could only time out. */
function largerThanBudget(bytes: number, field: string, maxBytes: number): ImagePipelineError {
  return validationError(
    [
      {
        path: field,
        message: `needs about ${Math.ceil(bytes / MB)} MB of pixel memory, more than this server's budget of ${Math.floor(maxBytes / MB)} MB; use a smaller image or output`,
      },
    ],
    ErrorCodes.IMAGE_TOO_LARGE,
  );
}
