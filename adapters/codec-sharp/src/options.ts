import { parseOptions } from "@pixport/core";
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
   * images: the core sets it), least recently used out first; `0` turns it off. A source is kept
   * from its second use among the last 1,024 sources, so an image transformed once costs nothing
   * more; then each further transform starts from its pixels instead of decoding the file again
   * (a 1920x1280 JPEG to 400 px wide: about 14 ms instead of 29). Kept: one frame, 8 bits per
   * channel, sRGB or grey, at most a quarter of this size each. Such a transform resamples the
   * full-size pixels, where a decode would have used JPEG or WebP shrink-on-load for a reduction of
   * 2x or more, so its pixels can differ slightly from the same transform of a source not kept (it
   * is the sharper of the two); below 2x they are the same bytes.
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
