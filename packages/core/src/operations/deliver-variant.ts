import { z } from "zod";
import { ErrorCodes, ImagePipelineError, imageNotFound, validationError } from "../errors.js";
import { FILE_EXTENSIONS, type ImageFormat, type ImageRecord, MIME_TYPES } from "../image.js";
import { outputPixelsIssue } from "../limits.js";
import type { WorkGate } from "../policies/work-gate.js";
import type { CachedVariant, VariantCache, VariantSigner } from "../ports/variant-cache.js";
import { imagePathSchema, parseAll } from "../schemas.js";
import { BLACK } from "../transforms/color.js";
import { type Size, stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";
import { type Caller, loadImageBytes, loadOwnedImage, type PipelineContext, runCodec } from "./context.js";
import { type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";
import {
  canonicalModifiers,
  chooseFormat,
  EXTENSIONS,
  type Extension,
  originalAcceptable,
  parseTokens,
  sizeToken,
  splitFile,
  tokenKey,
  variantExtensions,
  variantSteps,
} from "./variant-url.js";

export { createBlobVariantCache } from "./variant-cache.js";
export { canonicalModifiers } from "./variant-url.js";

const qualitySchema = z.number().int().min(1).max(100);

/**
 * Quality per output format when a variant URL has no `q_`, at about equal visual quality: WebP
 * q82 and AVIF q64 land within 0.004 of JPEG q80's median SSIM on the corpus of bench/bytes.mjs
 * (sharp: AVIF effort 1, 4:2:0), at 0.57x and 0.62x its median bytes; AVIF q80 would be as large
 * as the JPEG. Lossless formats ignore it.
 */
export const DEFAULT_DELIVERY_QUALITY: Readonly<Record<ImageFormat, number>> = {
  jpeg: 80,
  webp: 82,
  avif: 64,
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
   * @default { jpeg: 80, webp: 82, avif: 64, png: 80, gif: 80, tiff: 80 }
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
});
export type DeliveryOptions = z.input<typeof deliveryOptionsSchema>;

/** `GET /v/{signature}/{image_id}/{modifiers}.{ext}`. */
export interface VariantRequest {
  signature: string;
  imageId: string;
  /** `{modifiers}.{ext}` (`_` for no modifiers). */
  file: string;
  /** The request's `Accept` header (for `auto`). */
  accept?: string | undefined;
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
  cache: "HIT" | "MISS";
}

/** Body of `POST /v1/images/{image_id}/signed-url`. */
export const signedUrlSchema = z.object({
  /** Comma-separated modifiers, e.g. `w_800,fit_cover,h_600`. */
  modifiers: z.string().max(500).optional(),
  format: z.enum(variantExtensions()).default("auto"),
  /** Seconds until the URL expires: 1 s to 7 days. @default 3600 */
  expires_in: z
    .number()
    .int("must be an integer")
    .min(1, "must be between 1 and 604800 (7 days)")
    .max(604_800, "must be between 1 and 604800 (7 days)")
    .default(3600),
});
export type SignedUrlInput = z.input<typeof signedUrlSchema>;

/** Input of `createSignedUrl`: the image id and `{modifiers?, format?, expires_in?}`. */
export type SignedUrlRequest = ImageBodyInput<typeof signedUrlSchema>;

/** Validates a signed-URL request: the image id first, then the body. */
export function parseSignedUrlRequest(input: SignedUrlRequest): ParsedImageBody<typeof signedUrlSchema> {
  const { imageId } = parseImageId(input);
  const [body] = parseAll([[signedUrlSchema, input?.body ?? {}]] as const);
  return { imageId, body };
}

/** Answer of `POST /v1/images/{image_id}/signed-url`. */
export interface SignedUrl {
  url: string;
  /** ISO 8601, UTC. */
  expires_at: string;
}

/**
 * Part of every variant's cache key: changed when one URL comes to mean other bytes (no upscaling
 * without `enlarge_1`, never larger than the original), so variants cached by older rules are
 * computed again rather than served.
 */
const VARIANT_RULES = "rules-2";

/** A map that forgets its oldest entries beyond `limit`. */
function boundedMemo<T>(limit: number): {
  get(key: string): T | undefined;
  set(key: string, value: T): void;
} {
  const entries = new Map<string, T>();
  return {
    get: (key) => entries.get(key),
    set(key, value) {
      entries.set(key, value);
      if (entries.size > limit) entries.delete(entries.keys().next().value as string);
    },
  };
}

async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Variant delivery on one pipeline: one in-flight computation per variant on this node. */
export interface VariantDelivery {
  deliver(request: VariantRequest): Promise<DeliveredVariant>;
  signedUrl(caller: Caller, input: ParsedImageBody<typeof signedUrlSchema>): Promise<SignedUrl>;
  /** Removes an image's cached variants (unpublish and delete call it). */
  forget(imageId: string): Promise<void>;
}

export function createVariantDelivery(
  context: PipelineContext,
  dependencies: {
    signer: VariantSigner | undefined;
    cache: VariantCache;
    gate: WorkGate | undefined;
    /**
     * Called once per variant about to be computed (a cache miss), for per-account counts and
     * allowances: rejects to refuse the miss; the returned function gives the count back when the
     * variant could not be made.
     */
    reserveMiss?: (accountId: string) => Promise<() => Promise<void>>;
  },
  options: z.output<typeof deliveryOptionsSchema>,
): VariantDelivery {
  const inflight = new Map<string, Promise<CachedVariant>>();
  const { signer, cache, gate } = dependencies;
  // Hits repeat the same URLs: Web Crypto's per-call overhead (HMAC, SHA-256) was 15 % of a hit's
  // CPU in bench/delivery.mjs, so verified signatures and cache keys are remembered (bounded).
  const verified = boundedMemo<true>(10_000);
  const keys = boundedMemo<string>(10_000);
  // The ETag hashes the bytes, not the variant's key: one variant can be computed twice with
  // different bytes (on two nodes at once, or again after eviction, from a source the codec kept
  // decoded one time and not the other), and a strong ETag promises the same bytes. Hot variants
  // are the same array on every hit, so each is hashed once.
  const etags = new WeakMap<Uint8Array, string>();
  const etagOf = async (data: Uint8Array): Promise<string> => {
    let etag = etags.get(data);
    if (etag === undefined) {
      etag = `"${(await sha256Hex(data)).slice(0, 32)}-${data.byteLength.toString(16)}"`;
      etags.set(data, etag);
    }
    return etag;
  };

  async function deliver(request: VariantRequest): Promise<DeliveredVariant> {
    const parts = splitFile(request.file);
    const imageId = parseAll([[imagePathSchema, { image_id: request.imageId }]] as const)[0].image_id;
    if (parts === null || !EXTENSIONS.includes(parts.ext)) {
      throw validationError([{ path: request.file, message: `must end with .${EXTENSIONS.join(", .")}` }]);
    }
    const ext = parts.ext as Extension;
    const canonical = canonicalModifiers(parts.tokens);
    const canonicalFile = `${canonical.length === 0 ? "_" : canonical}.${ext}`;
    // One spelling per variant, so a CDN in front never keeps the same picture under two keys:
    // modifiers in canonical order (as the URL signer writes them) and a lower-case extension.
    if (request.file !== canonicalFile) {
      throw new ImagePipelineError(
        ErrorCodes.ROUTE_NOT_FOUND,
        `Variant URLs have one spelling: ${canonicalFile} (modifiers in canonical order, lower-case extension), not ${request.file}.`,
      );
    }
    const signedPath = `/${imageId}/${canonicalFile}`;
    // The signature first: a forged URL costs an HMAC, never a decode.
    if (request.signature === "_") {
      const onlyPreset = parts.tokens.length === 1 && tokenKey(parts.tokens[0]!) === "p";
      if (!options.allowUnsigned && !onlyPreset) {
        throw new ImagePipelineError(
          ErrorCodes.FORBIDDEN,
          "Unsigned variant URLs may only name a preset (p_{name}); sign the URL.",
        );
      }
    } else if (verified.get(`${request.signature}${signedPath}`) === undefined) {
      if (signer === undefined || !(await signer.verify(signedPath, request.signature))) {
        throw new ImagePipelineError(ErrorCodes.FORBIDDEN, "The variant URL's signature is not valid.");
      }
      verified.set(`${request.signature}${signedPath}`, true);
    }
    let modifiers = parseTokens(parts.tokens, options.presets);
    if (modifiers.exp !== undefined && modifiers.exp * 1000 <= context.clock.now().getTime()) {
      throw new ImagePipelineError(ErrorCodes.FORBIDDEN, "The variant URL has expired.");
    }
    if (modifiers.p !== undefined) {
      const expanded = parseTokens(options.presets[modifiers.p]!.split(","), {});
      modifiers = { ...expanded, ...modifiers };
    }
    const record = await context.images.get(imageId);
    // Published images only, unless the URL carries an expiry (made by signed-url for its owner).
    if (record === null || (record.url === null && modifiers.exp === undefined)) throw imageNotFound(imageId);
    // The output's size does not depend on its format: `auto` skips a format it would exceed the
    // output limit of (a large AVIF costs far more than its WebP), an explicit one is refused.
    const finalSize = variantSteps(modifiers, record, "png", context.limits.maxOutputSide).reduce<Size>(
      (size, step) => stepOutputSize(step, size),
      record,
    );
    const sizeField = sizeToken(modifiers) ?? request.file;
    const fits = (candidate: ImageFormat) =>
      outputPixelsIssue(context.limits, candidate, finalSize, sizeField) === null;
    const { format, auto } = chooseFormat(ext, request.accept, record, context, fits);
    if (!context.codec.capabilities.outputFormats.includes(format)) {
      throw validationError([
        { path: request.file, message: `${format} is not written by this server's codec` },
      ]);
    }
    const tooLarge = outputPixelsIssue(context.limits, format, finalSize, sizeField);
    if (tooLarge !== null) throw validationError([tooLarge], ErrorCodes.OUTPUT_TOO_LARGE);
    const quality = modifiers.q ?? options.defaultQuality[format];
    const steps = variantSteps(modifiers, record, format, context.limits.maxOutputSide);
    const withoutExpiry = canonicalModifiers(parts.tokens.filter((token) => tokenKey(token) !== "exp"));
    // A preset is keyed by what it expands to: redefining it makes new variants, not old ones.
    const preset = modifiers.p === undefined ? "" : `|p=${options.presets[modifiers.p]}`;
    // A variant that changes only the format or quality never costs more bytes than the original
    // it came from, when the original is one the request accepts (so it is part of the key).
    const orOriginal = steps.length === 0 && originalAcceptable(ext, request.accept, record);
    const identity = `${withoutExpiry}${preset}|${format}|${quality}|${VARIANT_RULES}${orOriginal ? "|or-original" : ""}`;
    let key = keys.get(identity);
    if (key === undefined) {
      key = `${(await sha256Hex(identity)).slice(0, 40)}.${FILE_EXTENSIONS[format]}`;
      keys.set(identity, key);
    }
    let variant = await cache.get(imageId, key);
    let state: "HIT" | "MISS" = "HIT";
    if (variant === null) {
      state = "MISS";
      const flightKey = `${imageId}/${key}`;
      let flight = inflight.get(flightKey);
      if (flight === undefined) {
        flight = (async () => {
          const release = await dependencies.reserveMiss?.(record.accountId);
          try {
            const made = await compute(record, steps, format, quality, orOriginal, request.signal);
            await cache.put(imageId, key, made);
            return made;
          } catch (error) {
            await release?.();
            throw error;
          }
        })();
        inflight.set(flightKey, flight);
        flight.then(
          () => inflight.delete(flightKey),
          () => inflight.delete(flightKey),
        );
      }
      variant = await flight;
      // A variant of an image unpublished or deleted meanwhile is not served.
      const current = await context.images.get(imageId);
      if (current === null || (current.url === null && modifiers.exp === undefined)) {
        await cache.removeImage(imageId);
        throw imageNotFound(imageId);
      }
    }
    const remaining =
      modifiers.exp === undefined
        ? undefined
        : modifiers.exp - Math.floor(context.clock.now().getTime() / 1000);
    return {
      data: variant.data,
      contentType: variant.contentType,
      etag: await etagOf(variant.data),
      cacheControl:
        remaining === undefined
          ? "public, max-age=31536000, immutable"
          : `private, max-age=${Math.max(0, Math.min(remaining, 3600))}`,
      varyAccept: auto,
      cache: state,
    };
  }

  async function compute(
    record: ImageRecord,
    steps: TransformStep[],
    format: ImageFormat,
    quality: number,
    orOriginal: boolean,
    signal: AbortSignal | undefined,
  ): Promise<CachedVariant> {
    const work = async () => {
      const encoded = await runCodec(context, {
        input: record,
        steps,
        output: { format, quality, flattenBackground: BLACK },
        onError: "stored",
        memory: { size: record, field: "image", frames: record.frames, signal },
      });
      if (orOriginal && encoded.data.byteLength > record.size) {
        return { data: await loadImageBytes(context, record), contentType: MIME_TYPES[record.format] };
      }
      return { data: encoded.data, contentType: MIME_TYPES[encoded.format] };
    };
    return gate === undefined ? work() : gate.run(work, signal);
  }

  async function signedUrl(
    caller: Caller,
    input: ParsedImageBody<typeof signedUrlSchema>,
  ): Promise<SignedUrl> {
    const { imageId, body } = input;
    const tokens =
      body.modifiers === undefined ? [] : body.modifiers.split(",").filter((token) => token !== "");
    parseTokens(
      tokens.filter((token) => tokenKey(token) !== "exp"),
      options.presets,
    );
    const record = await loadOwnedImage(context, caller, imageId);
    if (signer === undefined || options.baseUrl === undefined) {
      throw new ImagePipelineError(
        ErrorCodes.MODEL_NOT_CONFIGURED,
        "Variant delivery is not configured on this server (no signing key or base URL).",
      );
    }
    const expires = Math.floor(context.clock.now().getTime() / 1000) + body.expires_in;
    const canonical = canonicalModifiers([
      ...tokens.filter((token) => tokenKey(token) !== "exp"),
      `exp_${expires}`,
    ]);
    const path = `/${record.id}/${canonical}.${body.format}`;
    return {
      url: `${options.baseUrl.replace(/\/+$/, "")}/v/${await signer.sign(path)}${path}`,
      expires_at: new Date(expires * 1000).toISOString(),
    };
  }

  return {
    deliver,
    signedUrl,
    forget: (imageId) => cache.removeImage(imageId),
  };
}
