import { z } from "zod";

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

/** Human form of a byte count for messages: `20MB`, `512KB`. */
export function formatBytes(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024}KB`;
  return `${bytes} bytes`;
}
