import { parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";

/**
 * Options of {@link createSharpCodec}, parsed once at construction.
 *
 * `concurrency` and `cache` change process-wide sharp settings: they affect every sharp user in the
 * process, so set them once, from the composition root.
 */
export const sharpImageCodecOptionsSchema = z.strictObject({
  /**
   * Threads libvips may use per image (`sharp.concurrency()`). `0` resets to the number of CPU cores.
   * Left unset, sharp's own default stays (1 on glibc without jemalloc, else the core count).
   * Process-wide.
   */
  concurrency: z.number().int().min(0).max(1024).optional(),
  /**
   * libvips operation cache (`sharp.cache()`): `false` disables it, `true` restores sharp's
   * defaults, an object sets limits (`memory` in MB, `files` and `items` as counts). Left unset,
   * sharp's default (50 MB, 20 files, 100 items) stays. Process-wide.
   */
  cache: z
    .union([
      z.boolean(),
      z.strictObject({
        memory: z.number().int().min(0).optional(),
        files: z.number().int().min(0).optional(),
        items: z.number().int().min(0).optional(),
      }),
    ])
    .optional(),
  /**
   * Largest decoded input (width x height), passed to sharp as `limitInputPixels` when a request
   * carries no usable `limits.maxInputPixels`.
   * @default 50_000_000
   */
  maxInputPixels: z.number().int().positive().default(50_000_000),
  /**
   * Blocks every libvips loader except the jpeg, png and webp buffer loaders (`sharp.block()`), as
   * defence in depth behind the magic-byte check that already keeps other formats away from sharp.
   * Process-wide: turn it off only when the same process uses sharp to read other formats.
   * @default true
   */
  blockUntrustedLoaders: z.boolean().default(true),
  /**
   * Bytes of decoded pixels kept between requests for inputs that carry a `sourceKey` (stored
   * images and origin originals: the core sets it), least recently used out first; `0` turns it off. A source is kept
   * from a use that follows a recent one (among the last 1,024 sources) when it will likely be
   * used again while kept: when there is room for it, or when the sources used since its last use
   * fit beside it (sources rotating through more than the cache holds do not push each other out).
   * So an image transformed once costs nothing more, and each further transform of a kept source
   * starts from its pixels instead of decoding the file again. When the first step is a resize to
   * at most a half, a quarter or an eighth of the source on both axes, the source is kept reduced
   * that much (as a decode for that size reduces a JPEG on load), and kept again larger when a
   * larger size is asked. Kept: one frame, 8 bits per channel, sRGB or grey, at most a quarter of
   * this size each. A transform from kept pixels resamples them where a decode would have used
   * JPEG or WebP shrink-on-load, so its pixels can differ slightly from the same transform of a
   * source not kept; for a reduction under 2x from a whole source they are the same bytes.
   * @default 67_108_864 (64 MiB)
   */
  sourceCacheBytes: z
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
});

/** Options of {@link createSharpCodec} (all optional; see {@link sharpImageCodecOptionsSchema}). */
export type SharpImageCodecOptions = z.input<typeof sharpImageCodecOptionsSchema>;

/** Options after defaults were applied. */
export type ResolvedSharpImageCodecOptions = z.output<typeof sharpImageCodecOptionsSchema>;

export function parseSharpImageCodecOptions(options: unknown): ResolvedSharpImageCodecOptions {
  return parseOptions(
    sharpImageCodecOptionsSchema,
    options ?? {},
    "sharp codec",
    "Fix the options passed to createSharpCodec().",
  );
}
