import { parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";

/** Options of {@link createJimpCodec}, parsed once at construction. */
export const jimpImageCodecOptionsSchema = z.strictObject({
  /**
   * Largest decoded input (width x height), used when a request carries no usable
   * `limits.maxInputPixels`. Checked from the header before any pixel is decoded; overlays are held
   * to the same cap (their decoded and their scaled size).
   * @default 50_000_000
   */
  maxInputPixels: z.number().int().positive().default(50_000_000),
  /**
   * Worker threads running the transforms (jimp is synchronous JavaScript: on the calling thread a
   * large image would block the event loop for its whole transform). `0` runs them on the calling
   * thread. @default min(4, available cores)
   */
  workers: z.number().int().min(0).max(64).optional(),
  /**
   * Path or file URL of the worker script, for bundles that build `dist/worker.js` as an entry of
   * their own.
   * @default the package's own dist/worker.js
   */
  workerScript: z.union([z.string().min(1), z.instanceof(URL)]).optional(),
  /**
   * Bytes of decoded pixels kept between requests for inputs that carry a `sourceKey` (stored
   * images and origin originals), shared out evenly between the worker threads (each keeps its own), least recently
   * used out first; `0` turns it off. As in the sharp codec: a source is kept (on that thread)
   * from a use that follows a recent one when it will likely be used again while kept, whole, one
   * frame only, at most a quarter of a thread's share;
   * jimp's decode is JavaScript, so a kept source saves most of a transform. Kept pixels are the
   * decode's own, so the output is the same either way.
   * @default 67_108_864 (64 MiB)
   */
  sourceCacheBytes: z
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
});

/** Options of {@link createJimpCodec} (all optional; see {@link jimpImageCodecOptionsSchema}). */
export type JimpImageCodecOptions = z.input<typeof jimpImageCodecOptionsSchema>;

/** Options after defaults were applied. */
export type ResolvedJimpImageCodecOptions = z.output<typeof jimpImageCodecOptionsSchema>;

export function parseJimpImageCodecOptions(options: unknown): ResolvedJimpImageCodecOptions {
  return parseOptions(
    jimpImageCodecOptionsSchema,
    options ?? {},
    "jimp codec",
    "Fix the options passed to createJimpCodec().",
  );
}
