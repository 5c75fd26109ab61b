import { ErrorCodes, imageNotFound, isImagePipelineError } from "../errors.js";
import { type ImageFormat, type ImageRecord, MIME_TYPES } from "../image.js";
import type { WorkGate } from "../policies/work-gate.js";
import type { EncodedImage } from "../ports/image-codec.js";
import type { CachedVariant, VariantCache, VariantSigner } from "../ports/variant-cache.js";
import { applyClientHints, CLIENT_HINT_HEADERS } from "./client-hints.js";
import { runCodec } from "./codec-runner.js";
import { type Caller, loadImageBytes, type PipelineContext } from "./context.js";
import type { ParsedImageBody } from "./inputs.js";
import { createSignedUrl, type SignedUrl, type signedUrlSchema } from "./signed-url.js";
import type { DeliveredVariant, ResolvedDeliveryOptions, VariantRequest } from "./variant-options.js";
import { candidateOutput, type VariantCandidate, type VariantPlan } from "./variant-plan.js";
import { createVariantPlanner } from "./variant-planner.js";
import { createVariantUrlResolver, sha256Hex } from "./variant-request.js";
import type { Modifiers } from "./variant-url.js";

/*
 * The delivery flow of `GET /v/{signature}/{image_id}/{file}`: the URL resolved (variant-request.ts),
 * the source looked up, the variant planned (variant-plan.ts), then served from the variant cache
 * or computed once per node and kept.
 */

export {
  createSignedUrl,
  parseSignedUrlRequest,
  type SignedUrl,
  type SignedUrlInput,
  type SignedUrlRequest,
  signedUrlSchema,
} from "./signed-url.js";
export { createBlobVariantCache } from "./variant-cache.js";
export {
  DEFAULT_DELIVERY_QUALITY,
  type DeliveredVariant,
  type DeliveryOptions,
  deliveryOptionsSchema,
  type VariantRequest,
} from "./variant-options.js";
export { canonicalModifiers } from "./variant-url.js";

/** Variant delivery on one pipeline: one in-flight computation per variant on this node. */
export interface VariantDelivery {
  deliver(request: VariantRequest): Promise<DeliveredVariant>;
  signedUrl(caller: Caller, input: ParsedImageBody<typeof signedUrlSchema>): Promise<SignedUrl>;
  /** Removes an image's cached variants (unpublish and delete call it). */
  forget(imageId: string): Promise<void>;
}

/** What variant delivery runs on beside the pipeline's context. */
export interface VariantDeliveryDependencies {
  signer: VariantSigner | undefined;
  cache: VariantCache;
  gate: WorkGate | undefined;
  /**
   * Called once per variant about to be computed (a cache miss), for per-account counts and
   * allowances: rejects to refuse the miss; the returned function gives the count back when the
   * variant could not be made.
   */
  reserveMiss?: (accountId: string) => Promise<() => Promise<void>>;
}

/**
 * The source a variant URL may be made of: a stored image that is published, or any image when
 * the URL carries an expiry (made by signed-url for its owner); `null` for none. The one place
 * delivery looks a source up.
 */
async function findSource(
  context: PipelineContext,
  imageId: string,
  modifiers: Modifiers,
): Promise<ImageRecord | null> {
  const record = await context.images.get(imageId);
  return record === null || (record.url === null && modifiers.exp === undefined) ? null : record;
}

/**
 * Strong ETags of variant bytes. The ETag hashes the bytes, not the variant's key: one variant can
 * be computed twice with different bytes (on two nodes at once, or again after eviction, from a
 * source the codec kept decoded one time and not the other), and a strong ETag promises the same
 * bytes. Hot variants are the same array on every hit, so each is hashed once.
 */
export function createEtags(): (data: Uint8Array) => Promise<string> {
  const etags = new WeakMap<Uint8Array, string>();
  return async (data) => {
    let etag = etags.get(data);
    if (etag === undefined) {
      etag = `"${(await sha256Hex(data)).slice(0, 32)}-${data.byteLength.toString(16)}"`;
      etags.set(data, etag);
    }
    return etag;
  };
}

/** `Cache-Control` of a variant: immutable, or private until the URL's expiry (at most an hour). */
function cacheControlOf(context: PipelineContext, modifiers: Modifiers): string {
  if (modifiers.exp === undefined) return "public, max-age=31536000, immutable";
  const remaining = modifiers.exp - Math.floor(context.clock.now().getTime() / 1000);
  return `private, max-age=${Math.max(0, Math.min(remaining, 3600))}`;
}

/**
 * Failures that mean this encoding cannot be made here (its output or memory estimate over a
 * limit, a format the codec lacks), so `auto` tries its next format; any other failure is the
 * answer.
 */
function cannotBeMade(error: unknown): boolean {
  return (
    isImagePipelineError(error) &&
    (error.code === ErrorCodes.OUTPUT_TOO_LARGE ||
      error.code === ErrorCodes.IMAGE_TOO_LARGE ||
      error.code === ErrorCodes.UNSUPPORTED_OPERATION)
  );
}

/**
 * Encodes each candidate of `plan` once and keeps the smallest (the first of equals); the fallback
 * only when nothing was made or the smallest is larger than its prediction.
 */
async function encodeSmallest(
  plan: VariantPlan,
  encode: (candidate: VariantCandidate) => Promise<EncodedImage>,
): Promise<EncodedImage> {
  let best: EncodedImage | undefined;
  let refusal: unknown;
  const attempt = async (candidate: VariantCandidate) => {
    try {
      const encoded = await encode(candidate);
      if (best === undefined || encoded.data.byteLength < best.data.byteLength) best = encoded;
    } catch (error) {
      if (!cannotBeMade(error)) throw error;
      refusal ??= error;
    }
  };
  for (const candidate of plan.candidates) await attempt(candidate);
  const { fallback } = plan;
  if (fallback !== undefined && (best === undefined || best.data.byteLength > fallback.predictedBytes)) {
    await attempt(fallback);
  }
  const made = best as EncodedImage | undefined;
  if (made === undefined) throw refusal;
  return made;
}

/**
 * What a variant is made of: an encoder of the plan's candidates, and the original (its size,
 * format, and bytes, read only when the original is the answer).
 */
export interface VariantSource {
  encode(candidate: VariantCandidate): Promise<EncodedImage>;
  size: number;
  format: ImageFormat;
  bytes(): Promise<Uint8Array>;
}

/**
 * Encodes a planned variant in one work-gate slot: each candidate once, the smallest kept (the
 * first of equals), the fallback only when nothing was made or the smallest is larger than its
 * prediction; then the original instead when that is smaller still and acceptable. Stored images
 * and origin images alike.
 */
export async function computeVariant(
  gate: WorkGate | undefined,
  plan: VariantPlan,
  source: VariantSource,
  signal: AbortSignal | undefined,
): Promise<CachedVariant> {
  const work = async () => {
    const made = await encodeSmallest(plan, (candidate) => source.encode(candidate));
    if (plan.orOriginal && made.data.byteLength > source.size) {
      return { data: await source.bytes(), contentType: MIME_TYPES[source.format] };
    }
    return { data: made.data, contentType: MIME_TYPES[made.format] };
  };
  return gate === undefined ? work() : gate.run(work, signal);
}

/** A stored image as a variant's source: the codec reads it by its record, its bytes are loaded when answered. */
function storedSource(
  context: PipelineContext,
  record: ImageRecord,
  signal: AbortSignal | undefined,
): VariantSource {
  return {
    encode: (candidate) =>
      runCodec(context, {
        input: record,
        steps: candidate.steps,
        output: candidateOutput(candidate),
        onError: "stored",
        memory: { size: record, field: "image", frames: record.frames, signal },
      }),
    size: record.size,
    format: record.format,
    bytes: () => loadImageBytes(context, record),
  };
}

/**
 * The cached variant, else computed once per node however many ask at once, counted against the
 * source's account (`reserveMiss`; uncounted without one) and kept.
 */
export function createSingleFlight(
  cache: VariantCache,
  reserveMiss: VariantDeliveryDependencies["reserveMiss"],
): (
  imageId: string,
  accountId: string | undefined,
  key: string,
  make: () => Promise<CachedVariant>,
) => Promise<{ variant: CachedVariant; state: "HIT" | "MISS" }> {
  const inflight = new Map<string, Promise<CachedVariant>>();
  return async (imageId, accountId, key, make) => {
    const hit = await cache.get(imageId, key);
    if (hit !== null) return { variant: hit, state: "HIT" };
    const flightKey = `${imageId}/${key}`;
    let flight = inflight.get(flightKey);
    if (flight === undefined) {
      flight = (async () => {
        const release = accountId === undefined ? undefined : await reserveMiss?.(accountId);
        try {
          const made = await make();
          await cache.put(imageId, key, made);
          return made;
        } catch (error) {
          await release?.();
          throw error;
        }
      })();
      inflight.set(flightKey, flight);
      const done = () => inflight.delete(flightKey);
      flight.then(done, done);
    }
    return { variant: await flight, state: "MISS" };
  };
}

export function createVariantDelivery(
  context: PipelineContext,
  dependencies: VariantDeliveryDependencies,
  options: ResolvedDeliveryOptions,
): VariantDelivery {
  const { signer, cache, gate } = dependencies;
  const cachedOrComputed = createSingleFlight(cache, dependencies.reserveMiss);
  const resolveUrl = createVariantUrlResolver(signer, options, context.clock);
  const planned = createVariantPlanner(context, options);
  const etagOf = createEtags();

  async function deliver(request: VariantRequest): Promise<DeliveredVariant> {
    const asked = await resolveUrl(request);
    const record = await findSource(context, asked.imageId, asked.modifiers);
    if (record === null) throw imageNotFound(asked.imageId);
    const url = applyClientHints(asked, request.hints, record);
    const { plan, cacheId, key } = await planned(url, { imageId: url.imageId, record }, request.accept);
    const { variant, state } = await cachedOrComputed(cacheId, record.accountId, key, () =>
      computeVariant(gate, plan, storedSource(context, record, request.signal), request.signal),
    );
    if (state === "MISS") {
      // A variant of an image unpublished or deleted meanwhile is not served.
      if ((await findSource(context, url.imageId, url.modifiers)) === null) {
        await cache.removeImage(url.imageId);
        throw imageNotFound(url.imageId);
      }
    }
    return {
      data: variant.data,
      contentType: variant.contentType,
      etag: await etagOf(variant.data),
      cacheControl: cacheControlOf(context, url.modifiers),
      varyAccept: plan.auto,
      vary: [...(plan.auto ? ["Accept"] : []), ...(url.hintedWidth === undefined ? [] : CLIENT_HINT_HEADERS)],
      cache: state,
    };
  }

  return {
    deliver,
    signedUrl: (caller, input) => createSignedUrl(context, signer, options, caller, input),
    forget: (imageId) => cache.removeImage(imageId),
  };
}
