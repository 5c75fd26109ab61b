import { z } from "zod";
import type { ValidationIssue } from "./errors.js";
import type { ImageFormat } from "./image.js";

const pixels = (fallback: number) => z.number().int().positive().default(fallback);
const bytes = pixels;
const MiB = 1024 * 1024;

// Measured with `node bench/memory.mjs` (CPU time of the whole job: decode, passes, encode; from a
// 50-megapixel photo-like JPEG): AVIF (libaom, effort 1) about 0.2 s a megapixel of output, GIF
// (libimagequant, effort 3, dithered) 0.5 s, WebP 0.16 s at 16 MP but 0.34 s at 50 MP (20.4 s for
// a 7071 x 7071 WebP); JPEG, PNG and TIFF stay under 8 s at the largest output the budget allows.
// Each limit keeps its format's worst allowed job under about 9 s of CPU, a third of `maxJobMs`.
/** AVIF: 4096 x 4096 (libaom holds 20+ bytes a pixel beside the image). */
const AVIF_MAX_OUTPUT_PIXELS = 4096 * 4096;
/** GIF: 4096 x 4096, of every frame (8.5 s of CPU for one frame that size). */
const GIF_MAX_OUTPUT_PIXELS = 4096 * 4096;
/** WebP: 25 megapixels (5000 x 5000), of every frame. */
const WEBP_MAX_OUTPUT_PIXELS = 25_000_000;

/**
 * Safety limits, on by default and configurable per deployment.
 */
export const limitsSchema = z.object({
  /** Largest accepted upload, bytes. @default 20 MiB */
  maxUploadBytes: z
    .number()
    .int()
    .positive()
    .default(20 * 1024 * 1024),
  /** Largest decoded input, width x height. @default 50,000,000 */
  maxInputPixels: z.number().int().positive().default(50_000_000),
  /**
   * Most frames of an animation (or pages of a TIFF), counted from the header before decoding.
   * `maxInputPixels` also bounds the whole animation: frames x width x height. @default 200
   */
  maxFrames: z.number().int().positive().default(200),
  /** Largest input side, px. @default 10,000 */
  maxInputSide: z.number().int().positive().default(10_000),
  /** Largest output side, px. @default 10,000 */
  maxOutputSide: z.number().int().positive().default(10_000),
  /**
   * Largest output per format, width x height (x frames, for an animation kept animated), checked from the planned size before
   * any decode: a request beyond it is a 422 `OUTPUT_TOO_LARGE` naming the field that made the
   * output so large (the variant's modifier, `width`, `angle`, `format`, or the upload's `image`).
   * The limits keep every allowed encode well inside `maxJobMs` and within the memory budget: the
   * AVIF, GIF and WebP encoders cannot be stopped once they run (libvips hands the whole image to
   * libaom, libimagequant or libwebp in one call), and cost far more per pixel than JPEG, PNG or
   * TIFF. Measured with `node bench/memory.mjs` (CPU time and peak RSS of the largest allowed
   * output of each format, beside the memory budget's estimate).
   */
  maxOutputPixels: z
    .object({
      /** @default 16,777,216 (4096 x 4096) */
      avif: pixels(AVIF_MAX_OUTPUT_PIXELS),
      /** @default 16,777,216 (4096 x 4096) */
      gif: pixels(GIF_MAX_OUTPUT_PIXELS),
      /** @default 25,000,000 (5000 x 5000) */
      webp: pixels(WEBP_MAX_OUTPUT_PIXELS),
      /** @default 100,000,000 (only `maxOutputSide`) */
      jpeg: pixels(100_000_000),
      /** @default 100,000,000 (only `maxOutputSide`) */
      png: pixels(100_000_000),
      /** @default 100,000,000 (only `maxOutputSide`) */
      tiff: pixels(100_000_000),
    })
    .strict()
    .prefault({}),
  /**
   * Largest encoded output per format, bytes: a result over it is refused with 422
   * `OUTPUT_TOO_LARGE` (naming the field that sized it) and never stored or cached. The encoded
   * size is known only after the encode (so the pixel limits above bound the work); these bound
   * what one request may store, whatever the content: noise or dithering at a high quality can
   * encode to several bytes a pixel, and a deployment that raises the pixel limits raises the
   * bytes with them.
   */
  maxOutputBytes: z
    .object({
      /** @default 64 MiB */
      avif: bytes(64 * MiB),
      /** @default 64 MiB */
      gif: bytes(64 * MiB),
      /** @default 64 MiB */
      webp: bytes(64 * MiB),
      /** @default 128 MiB */
      jpeg: bytes(128 * MiB),
      /** @default 256 MiB */
      png: bytes(256 * MiB),
      /** @default 256 MiB */
      tiff: bytes(256 * MiB),
    })
    .strict()
    .prefault({}),
  /**
   * Most scans in an uploaded or imported JPEG, counted from its markers before decoding. Each
   * scan of a progressive JPEG makes the decoder pass over the whole image again; usual encoders
   * write 1 to about 12. @default 100
   */
  maxJpegScans: z.number().int().positive().default(100),
  /**
   * Longest time one codec job (decode, steps, encode) may take, ms; beyond, the work is stopped
   * (sharp's timeout, or the jimp worker is terminated) and the request answers 422
   * `PROCESSING_TIMEOUT`. @default 30000
   */
  maxJobMs: z.number().int().min(100).max(600_000).default(30_000),
});

export type Limits = z.output<typeof limitsSchema>;
export type LimitsOptions = z.input<typeof limitsSchema>;

export const DEFAULT_LIMITS: Limits = limitsSchema.parse({});

/**
 * The 422 issue of an output of `size` px (and `frames`, counted for the animated formats) in
 * `format` beyond `limits.maxOutputPixels`, naming `field`; `null` when it is allowed.
 */
export function outputPixelsIssue(
  limits: Pick<Limits, "maxOutputPixels">,
  format: ImageFormat,
  size: { width: number; height: number },
  field: string,
  frames = 1,
): ValidationIssue | null {
  const max = limits.maxOutputPixels[format];
  const count = format === "gif" || format === "webp" ? Math.max(1, frames) : 1;
  if (size.width * size.height * count <= max) return null;
  const side = Math.floor(Math.sqrt(max));
  const would = `${size.width} x ${size.height}${count > 1 ? ` x ${count} frames` : ""}`;
  return {
    path: field,
    message: `must result in a ${format} image of at most ${max.toLocaleString("en-US")} pixels (about ${side} x ${side}; would be ${would}): ask for a smaller size or another format`,
  };
}

/**
 * The 422 issue of an encoded output of `size` bytes in `format` beyond `limits.maxOutputBytes`,
 * naming `field`; `null` when it is allowed.
 */
export function outputBytesIssue(
  limits: Pick<Limits, "maxOutputBytes">,
  format: ImageFormat,
  size: number,
  field: string,
): ValidationIssue | null {
  const max = limits.maxOutputBytes[format];
  if (size <= max) return null;
  return {
    path: field,
    message: `must result in a ${format} file of at most ${formatBytes(max)} (would be ${size.toLocaleString("en-US")} bytes): ask for a smaller size, a lower quality or another format`,
  };
}

/** Human form of a byte count for messages: `20MB`, `512KB`. */
export function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024}KB`;
  return `${bytes} bytes`;
}
