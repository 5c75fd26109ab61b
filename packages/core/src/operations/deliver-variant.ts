import { z } from "zod";
import { ErrorCodes, ImagePipelineError, imageNotFound, validationError } from "../errors.js";
import { FILE_EXTENSIONS, formatHasAlpha, type ImageFormat, type ImageRecord, MIME_TYPES } from "../image.js";
import type { WorkGate } from "../policies/work-gate.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { CachedVariant, VariantCache, VariantSigner } from "../ports/variant-cache.js";
import { imagePathSchema, POSITIONS, parseAll } from "../schemas.js";
import { BLACK, parseColor, type Rgba, TRANSPARENT } from "../transforms/color.js";
import { blurSteps, planOutputSize, rotatedSize, type Size, stepOutputSize } from "../transforms/plan.js";
import type { Position, TransformStep } from "../transforms/steps.js";
import { type Caller, loadOwnedImage, type PipelineContext, runCodec } from "./context.js";
import { type ImageBodyInput, type ParsedImageBody, parseImageId } from "./inputs.js";

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
  /** Quality when the URL has no `q_`. @default 80 */
  defaultQuality: z.number().int().min(1).max(100).default(80),
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
  format: z.enum(["jpeg", "jpg", "png", "webp", "avif", "gif", "auto"]).default("auto"),
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

const EXTENSIONS = ["jpeg", "jpg", "png", "webp", "avif", "gif", "auto"] as const;
type Extension = (typeof EXTENSIONS)[number];
const FITS = ["fill", "contain", "cover", "inside"] as const;

/** Parsed modifiers. */
interface Modifiers {
  w?: number;
  h?: number;
  fit?: (typeof FITS)[number];
  pos?: Position;
  dpr?: number;
  q?: number;
  rot?: number;
  flip?: "h" | "v" | "both";
  blur?: number;
  crop?: { x1: number; y1: number; x2: number; y2: number };
  bg?: Rgba;
  p?: string;
  exp?: number;
}

/** The key of a `key_value` token. */
function tokenKey(token: string): string {
  const index = token.indexOf("_");
  return index < 0 ? token : token.slice(0, index);
}

/** Canonical order: by key, then by token (the same rule as `@pixport/url-signer`). */
export function canonicalModifiers(tokens: readonly string[]): string {
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...tokens]
    .filter((token) => token.length > 0)
    .sort((a, b) => compare(tokenKey(a), tokenKey(b)) || compare(a, b))
    .join(",");
}

function splitFile(file: string): { tokens: string[]; ext: string } | null {
  const dot = file.lastIndexOf(".");
  if (dot <= 0) return null;
  const body = file.slice(0, dot);
  return { tokens: body === "_" ? [] : body.split(","), ext: file.slice(dot + 1).toLowerCase() };
}

const integer = (value: string) => (/^-?\d+$/.test(value) ? Number(value) : Number.NaN);
const decimal = (value: string) => (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN);

/** Parses tokens; every bad token is one issue named by the token itself. */
function parseTokens(tokens: readonly string[], presets: Readonly<Record<string, string>>): Modifiers {
  const issues: { path: string; message: string }[] = [];
  const result: Modifiers = {};
  const seen = new Set<string>();
  for (const token of tokens) {
    const key = tokenKey(token);
    const value = token.slice(key.length + 1);
    const bad = (message: string) => issues.push({ path: token, message });
    if (seen.has(key)) {
      bad(`repeats ${key}_ (one of each)`);
      continue;
    }
    seen.add(key);
    switch (key) {
      case "w":
      case "h": {
        const number = integer(value);
        if (!(number >= 1 && number <= 10_000)) bad("must be an integer between 1 and 10000");
        else result[key] = number;
        break;
      }
      case "fit":
        if (!(FITS as readonly string[]).includes(value)) bad(`must be one of: ${FITS.join(", ")}`);
        else result.fit = value as Modifiers["fit"];
        break;
      case "pos":
        if (!(POSITIONS as readonly string[]).includes(value)) bad(`must be one of: ${POSITIONS.join(", ")}`);
        else result.pos = value as Position;
        break;
      case "dpr": {
        const number = decimal(value);
        if (!(number >= 1 && number <= 4)) bad("must be a number between 1 and 4");
        else result.dpr = number;
        break;
      }
      case "q": {
        const number = integer(value);
        if (!(number >= 1 && number <= 100)) bad("must be an integer between 1 and 100");
        else result.q = number;
        break;
      }
      case "rot": {
        const number = decimal(value);
        if (!(Number.isFinite(number) && Math.abs(number) <= 360))
          bad("must be a number of degrees between -360 and 360");
        else result.rot = number;
        break;
      }
      case "flip":
        if (value !== "h" && value !== "v" && value !== "both") bad("must be one of: h, v, both");
        else result.flip = value;
        break;
      case "blur": {
        const number = decimal(value);
        if (!(number >= 1 && number <= 1000)) bad("must be a number between 1 and 1000");
        else result.blur = number;
        break;
      }
      case "crop": {
        const parts = value.split(":").map(integer);
        const [x1, y1, x2, y2] = parts as [number, number, number, number];
        if (parts.length !== 4 || parts.some((part) => !(part >= 0)) || x2 <= x1 || y2 <= y1) {
          bad("must be x1:y1:x2:y2, integers >= 0 with x2 > x1 and y2 > y1");
        } else result.crop = { x1, y1, x2, y2 };
        break;
      }
      case "bg": {
        const color = parseColor(/^[0-9a-f]{3,8}$/i.test(value) ? `#${value}` : value);
        if (color === null) bad("must be a CSS colour name or hex digits (rgb, rrggbb, rrggbbaa) without #");
        else result.bg = color;
        break;
      }
      case "p":
        // Own keys only: `p_constructor` must not find Object.prototype's members.
        if (!Object.hasOwn(presets, value)) bad("is not a preset of this server");
        else result.p = value;
        break;
      case "exp": {
        const number = integer(value);
        if (!(number > 0)) bad("must be a unix time in seconds");
        else result.exp = number;
        break;
      }
      default:
        bad("is not a modifier (w, h, fit, pos, dpr, q, rot, flip, blur, crop, bg, p, exp)");
    }
  }
  if (issues.length > 0) throw validationError(issues);
  return result;
}

/** The transform steps of a variant, in a fixed order: crop, rotate, flip, resize, blur. */
function variantSteps(
  modifiers: Modifiers,
  source: Size,
  output: ImageFormat,
  maxOutputSide: number,
): TransformStep[] {
  const steps: TransformStep[] = [];
  const issues: { path: string; message: string }[] = [];
  let size = source;
  const background = modifiers.bg ?? (formatHasAlpha(output) ? TRANSPARENT : BLACK);
  const opaqueBackground = formatHasAlpha(output) ? background : { ...background, alpha: 1 };
  if (modifiers.crop !== undefined) {
    const { x1, y1, x2, y2 } = modifiers.crop;
    if (x2 > size.width || y2 > size.height) {
      issues.push({
        path: `crop_${x1}:${y1}:${x2}:${y2}`,
        message: `must lie inside the ${size.width} x ${size.height} image`,
      });
    } else {
      steps.push({ type: "crop", left: x1, top: y1, width: x2 - x1, height: y2 - y1 });
      size = { width: x2 - x1, height: y2 - y1 };
    }
  }
  if (modifiers.rot !== undefined && modifiers.rot % 360 !== 0) {
    const angle = ((modifiers.rot % 360) + 360) % 360;
    steps.push({ type: "rotate", angle, background: opaqueBackground });
    size = rotatedSize(size, angle);
  }
  if (modifiers.flip !== undefined) {
    const mode = modifiers.flip === "h" ? "horizontal" : modifiers.flip === "v" ? "vertical" : "both";
    steps.push({ type: "mirror", mode });
  }
  const dpr = modifiers.dpr ?? 1;
  if (modifiers.w !== undefined || modifiers.h !== undefined) {
    let width = modifiers.w === undefined ? undefined : Math.round(modifiers.w * dpr);
    let height = modifiers.h === undefined ? undefined : Math.round(modifiers.h * dpr);
    let fit = modifiers.fit ?? "cover";
    if (width !== undefined && height !== undefined && fit === "inside") {
      const factor = Math.min(width / size.width, height / size.height);
      width = Math.max(1, Math.round(size.width * factor));
      height = Math.max(1, Math.round(size.height * factor));
      fit = "fill";
    }
    if (width === undefined || height === undefined) fit = "fill";
    width ??= Math.max(1, Math.round((size.width * height!) / size.height));
    height ??= Math.max(1, Math.round((size.height * width) / size.width));
    const position = modifiers.pos ?? "center";
    if ((position === "attention" || position === "entropy") && fit !== "cover") {
      issues.push({ path: `pos_${position}`, message: "needs fit_cover with both w_ and h_" });
    }
    const step: TransformStep = {
      type: "resize",
      width,
      height,
      fit: fit as "fill" | "contain" | "cover",
      position,
      background: opaqueBackground,
    };
    steps.push(step);
    size = stepOutputSize(step, size);
  }
  if (modifiers.blur !== undefined) {
    steps.push(...blurSteps(modifiers.blur, size));
  }
  if (issues.length > 0) throw validationError(issues);
  planOutputSize(steps, source, maxOutputSide, (step) =>
    step.type === "resize" ? (modifiers.w !== undefined ? `w_${modifiers.w}` : `h_${modifiers.h}`) : "rot",
  );
  return steps;
}

/** Whether `accept` lists `type` (with a q above 0). */
function accepts(accept: string | undefined, type: string): boolean {
  if (accept === undefined) return false;
  return accept.split(",").some((part) => {
    const [name, ...parameters] = part.trim().toLowerCase().split(";");
    if (name?.trim() !== type) return false;
    const q = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * The output format of a variant: the extension's, or for `auto` AVIF, then WebP, then the
 * source's own (PNG when the source has transparency; JPEG for a source format browsers do not
 * show). An animation asks for WebP or GIF so it stays animated.
 */
function chooseFormat(
  ext: Extension,
  accept: string | undefined,
  source: ImageRecord,
  context: PipelineContext,
): { format: ImageFormat; auto: boolean } {
  const { outputFormats, animation = [] } = context.codec.capabilities;
  if (ext !== "auto") return { format: ext === "jpg" ? "jpeg" : ext, auto: false };
  const animated = (source.frames ?? 1) > 1;
  if (animated) {
    if (accepts(accept, "image/webp") && animation.includes("webp")) return { format: "webp", auto: true };
    if (animation.includes(source.format)) return { format: source.format, auto: true };
  }
  if (!animated && accepts(accept, "image/avif") && outputFormats.includes("avif"))
    return { format: "avif", auto: true };
  if (accepts(accept, "image/webp") && outputFormats.includes("webp")) return { format: "webp", auto: true };
  const hasAlpha = source.facts?.hasAlpha ?? formatHasAlpha(source.format);
  if (hasAlpha) return { format: source.format === "gif" ? "gif" : "png", auto: true };
  const shown: ImageFormat[] = ["jpeg", "png", "webp", "gif"];
  return { format: shown.includes(source.format) ? source.format : "jpeg", auto: true };
}

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
    /** Called once per computed variant (a cache miss), for per-account counts. */
    onMiss?: (accountId: string) => void;
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
    if (parts === null || !(EXTENSIONS as readonly string[]).includes(parts.ext)) {
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
    const { format, auto } = chooseFormat(ext, request.accept, record, context);
    if (!context.codec.capabilities.outputFormats.includes(format)) {
      throw validationError([
        { path: request.file, message: `${format} is not written by this server's codec` },
      ]);
    }
    const quality = modifiers.q ?? options.defaultQuality;
    const steps = variantSteps(modifiers, record, format, context.limits.maxOutputSide);
    const withoutExpiry = canonicalModifiers(parts.tokens.filter((token) => tokenKey(token) !== "exp"));
    // A preset is keyed by what it expands to: redefining it makes new variants, not old ones.
    const preset = modifiers.p === undefined ? "" : `|p=${options.presets[modifiers.p]}`;
    const identity = `${withoutExpiry}${preset}|${format}|${quality}`;
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
        flight = compute(record, steps, format, quality, request.signal).then(async (made) => {
          await cache.put(imageId, key, made);
          dependencies.onMiss?.(record.accountId);
          return made;
        });
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

/**
 * A {@link VariantCache} on a BlobStore (the private store: files under the data directory, or S3),
 * under `variants/{image_id}/{key}`. Bounded by `maxBytes` on this node: variants this process
 * wrote or read are tracked least recently used first and the oldest are deleted past the bound
 * (variants from an earlier run count once read). A variant larger than `maxEntryBytes` (default:
 * an eighth of `maxBytes`) is served but never kept, so no one variant can push most others out.
 * Removing an image's variants needs a store that can list keys (fs, S3 and memory can).
 *
 * @example
 * ```ts
 * const variantCache = createBlobVariantCache(blobStore, { maxBytes: 256 * 1024 * 1024 });
 * const pipeline = createImagePipeline({ ...deps, variantCache });
 * ```
 */
export function createBlobVariantCache(
  store: BlobStore,
  options: { maxBytes: number; memoryBytes?: number; maxEntryBytes?: number },
): VariantCache & { readonly bytes: number } {
  const maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 8);
  const entries = new Map<string, number>();
  let bytes = 0;
  // Hot variants also stay in memory (least recently used out first), so a hit reads no disk.
  const hot = new Map<string, Uint8Array>();
  let hotBytes = 0;
  const memoryBytes = options.memoryBytes ?? 64 * 1024 * 1024;
  const keepHot = (name: string, data: Uint8Array) => {
    const previous = hot.get(name);
    if (previous !== undefined) {
      hot.delete(name);
      hotBytes -= previous.byteLength;
    }
    if (data.byteLength > memoryBytes / 4) return;
    hot.set(name, data);
    hotBytes += data.byteLength;
    while (hotBytes > memoryBytes) {
      const [oldest, oldestData] = hot.entries().next().value as [string, Uint8Array];
      hot.delete(oldest);
      hotBytes -= oldestData.byteLength;
    }
  };
  const dropHot = (name: string) => {
    const data = hot.get(name);
    if (data === undefined) return;
    hot.delete(name);
    hotBytes -= data.byteLength;
  };
  const blobKey = (imageId: string, key: string) => `variants/${imageId.toLowerCase()}/${key}`;
  const touch = async (name: string, size: number) => {
    const previous = entries.get(name);
    if (previous !== undefined) {
      bytes -= previous;
      entries.delete(name);
    }
    entries.set(name, size);
    bytes += size;
    while (bytes > options.maxBytes && entries.size > 1) {
      const [oldest, oldestSize] = entries.entries().next().value as [string, number];
      entries.delete(oldest);
      bytes -= oldestSize;
      dropHot(oldest);
      await store.delete(oldest).catch(() => undefined);
    }
  };
  return {
    get bytes() {
      return bytes;
    },
    async get(imageId, key) {
      const name = blobKey(imageId, key);
      const memory = hot.get(name);
      if (memory !== undefined) {
        keepHot(name, memory);
        return { data: memory, contentType: contentTypeOf(name) };
      }
      const data = await store.get(name);
      if (data === null) {
        const known = entries.get(name);
        if (known !== undefined) {
          entries.delete(name);
          bytes -= known;
        }
        return null;
      }
      await touch(name, data.byteLength);
      keepHot(name, data);
      return { data, contentType: contentTypeOf(name) };
    },
    async put(imageId, key, variant) {
      const name = blobKey(imageId, key);
      // No one variant may push out a large share of everyone else's: two variants of a 50 MP
      // image could otherwise empty the whole cache. It is served, just not kept.
      if (variant.data.byteLength > maxEntryBytes) return;
      // A cache: all-or-nothing is needed, durability is not (a lost variant is made again).
      await store.put(name, variant.data, { contentType: variant.contentType }, { durable: false });
      await touch(name, variant.data.byteLength);
      keepHot(name, variant.data);
    },
    async removeImage(imageId) {
      const prefix = `variants/${imageId.toLowerCase()}/`;
      for (const name of [...entries.keys()]) {
        if (!name.startsWith(prefix)) continue;
        bytes -= entries.get(name)!;
        entries.delete(name);
      }
      for (const name of [...hot.keys()]) if (name.startsWith(prefix)) dropHot(name);
      if (store.list === undefined) return;
      for await (const entry of store.list(prefix)) await store.delete(entry.key);
    },
  };
}

/** The content type of a cached variant from its key's extension. */
function contentTypeOf(name: string): string {
  const extension = name.slice(name.lastIndexOf(".") + 1);
  const format = (Object.keys(FILE_EXTENSIONS) as ImageFormat[]).find(
    (candidate) => FILE_EXTENSIONS[candidate] === extension,
  );
  return format === undefined ? "application/octet-stream" : MIME_TYPES[format];
}
