import { z } from "zod";
import type { ImageFormat } from "../image.js";
import type { ClientHints } from "./client-hints.js";
import { originNameSchema, originSettingsSchema } from "./origin-url.js";

/*
 * What variant delivery is configured with (`delivery` in the pipeline options) and what it takes
 * and answers per request.
 */

const qualitySchema = z.number().int().min(1).max(100);

/**
 * Quality per output format when a variant URL has no `q_`, at about equal visual quality: on the
 * photo corpus of bench/bytes.mjs (sharp: AVIF effort 1, 4:2:0) WebP q82 lands at JPEG q80's median
 * SSIM at 0.82x its median bytes, and AVIF q62 within 0.005 of it at 0.60x (the most AVIF may be
 * below JPEG's SSIM for `auto`'s budget); AVIF q80 would be as large as the JPEG. Lossless formats
 * ignore it.
 */
export const DEFAULT_DELIVERY_QUALITY: Readonly<Record<ImageFormat, number>> = {
  jpeg: 80,
  webp: 82,
  avif: 62,
  png: 80,
  gif: 80,
  tiff: 80,
};

/** Options of variant delivery (`delivery` in the pipeline options). */
export const deliveryOptionsSchema = z.strictObject({
  /**
   * Base URL the variant URLs live under (the public storage base URL of the server), used by
   * `createSignedUrl`. Variant URLs are `{baseUrl}/v/{signature}/{image_id}/{modifiers}.{ext}`.
   */
  baseUrl: z.url().optional(),
  /** Operator-defined presets: a name to its modifiers (`"thumb": "w_200,h_200,fit_cover"`), used as `p_{name}`. */
  presets: z.record(z.string().regex(/^[a-z0-9-]{1,32}$/), z.string().min(1).max(200)).default({}),
  /** Accept unsigned (`_`) URLs with any modifiers, not only presets. @default false */
  allowUnsigned: z.boolean().default(false),
  /**
   * Quality when the URL has no `q_`: one number for every format, or per format (formats left
   * out keep their default). The defaults give AVIF, WebP and JPEG about the same SSIM on a photo
   * corpus (bench/bytes.mjs), so no format pays for another's scale.
   * @default { jpeg: 80, webp: 82, avif: 62, png: 80, gif: 80, tiff: 80 }
   */
  defaultQuality: z
    .union([
      qualitySchema,
      z.strictObject({
        jpeg: qualitySchema.optional(),
        webp: qualitySchema.optional(),
        avif: qualitySchema.optional(),
        png: qualitySchema.optional(),
        gif: qualitySchema.optional(),
        tiff: qualitySchema.optional(),
      }),
    ])
    .default(DEFAULT_DELIVERY_QUALITY)
    .transform(
      (value): Record<ImageFormat, number> =>
        typeof value === "number"
          ? { jpeg: value, webp: value, avif: value, png: value, gif: value, tiff: value }
          : { ...DEFAULT_DELIVERY_QUALITY, ...value },
    ),
  /**
   * Origins of origin-image delivery by name (the `{origin}` of
   * `/v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`): the owning account, unsigned allow-list,
   * freshness, deadline and fetch share of each. Its source (where the bytes live) is the
   * pipeline's `origins.{name}` dependency; a source without settings here gets the defaults.
   * @default {}
   */
  origins: z.record(originNameSchema, originSettingsSchema).default({}),
});
export type DeliveryOptions = z.input<typeof deliveryOptionsSchema>;
export type ResolvedDeliveryOptions = z.output<typeof deliveryOptionsSchema>;

/** `GET /v/{signature}/{image_id}/{modifiers}.{ext}`. */
export interface VariantRequest {
  signature: string;
  imageId: string;
  /** `{modifiers}.{ext}` (`_` for no modifiers). */
  file: string;
  /** The request's `Accept` header (for `auto`). */
  accept?: string | undefined;
  /** The request's client hints (for `w_auto`). */
  hints?: ClientHints | undefined;
  signal?: AbortSignal | undefined;
}

/** A delivered variant. */
export interface DeliveredVariant {
  data: Uint8Array;
  contentType: string;
  /** Strong ETag of the bytes. */
  etag: string;
  cacheControl: string;
  /** `auto` chose the format from `Accept`: the answer must carry `Vary: Accept`. */
  varyAccept: boolean;
  /** The request headers the answer depends on, for `Vary`: `Accept` and the client hints of `w_auto`. */
  vary: string[];
  cache: "HIT" | "MISS";
}
