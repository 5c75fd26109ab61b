import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../errors.js";
import { LruMap } from "../lru.js";
import type { WorkGate } from "../policies/work-gate.js";
import type { OriginSource } from "../ports/origin-source.js";
import type { VariantCache, VariantSigner } from "../ports/variant-cache.js";
import { applyClientHints, CLIENT_HINT_HEADERS, type ClientHints } from "./client-hints.js";
import { runCodec } from "./codec-runner.js";
import type { PipelineContext } from "./context.js";
import { computeVariant, createEtags, createSingleFlight, type VariantSource } from "./deliver-variant.js";
import { type ConfiguredOrigin, createOriginals, type Original } from "./origin-originals.js";
import {
  ORIGIN_NAME_PATTERN,
  originSettingsSchema,
  parseOriginPath,
  type ResolvedOriginSettings,
} from "./origin-url.js";
import type { DeliveredVariant, ResolvedDeliveryOptions } from "./variant-options.js";
import { candidateOutput } from "./variant-plan.js";
import { createVariantPlanner } from "./variant-planner.js";
import { expandModifiers } from "./variant-request.js";
import { cacheToken, canonicalModifiers, type Extension, tokenKey } from "./variant-url.js";

/*
 * The delivery flow of `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`: the URL checked
 * (one spelling, the signature or the origin's unsigned allow-list), the original read through
 * the original cache (origin-originals.ts), the variant planned like a stored image's and served
 * from the variant cache or computed once per node.
 */

/** `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`. */
export interface OriginVariantRequest {
  signature: string;
  /** The origin's configured name. */
  origin: string;
  /** Canonical modifiers, or `_` for none. */
  modifiers: string;
  /** `{path}.{ext}` exactly as in the URL (percent-encoded segments). */
  path: string;
  /** The request's `Accept` header (for `auto`). */
  accept?: string | undefined;
  /** The request's client hints (for `w_auto`). */
  hints?: ClientHints | undefined;
  signal?: AbortSignal | undefined;
}

/** Origin-image delivery on one pipeline. */
export interface OriginDelivery {
  deliver(request: OriginVariantRequest): Promise<DeliveredVariant>;
}

/** What origin delivery runs on beside the pipeline's context. */
export interface OriginDeliveryDependencies {
  sources: Readonly<Record<string, OriginSource>>;
  signer: VariantSigner | undefined;
  /** The variant cache (variants of origin images live beside stored images' ones). */
  cache: VariantCache;
  /** The original cache: fetched originals, bounded, on the same store. */
  originals: VariantCache;
  gate: WorkGate | undefined;
  reserveMiss?: (accountId: string) => Promise<() => Promise<void>>;
}

const forbidden = (message: string) => new ImagePipelineError(ErrorCodes.FORBIDDEN, message);

/** Refuses an unsigned URL outside the origin's allow-list (403). */
function checkUnsigned(settings: ResolvedOriginSettings, name: string, tokens: string[], ext: string): void {
  const allow = settings.unsigned;
  if (allow === undefined) throw forbidden(`Origin ${name} needs signed URLs; sign the URL.`);
  if (!(allow.formats as readonly string[]).includes(ext)) {
    throw forbidden(
      `Unsigned URLs of origin ${name} may ask for the formats ${allow.formats.join(", ")} only.`,
    );
  }
  let width = false;
  for (const token of tokens) {
    const key = tokenKey(token);
    const value = Number(token.slice(key.length + 1));
    if (key === "w" && allow.widths.includes(value) && `w_${value}` === token) width = true;
    // As the variant cache keys them: "auto" allows q_auto:good too, the same variant.
    else if (
      !(key === "q" && allow.qualities.some((quality) => cacheToken(`q_${quality}`) === cacheToken(token)))
    ) {
      throw forbidden(
        `Unsigned URLs of origin ${name} may carry only an allowed w_ and q_; ${token} is not allowed.`,
      );
    }
  }
  if (!width) throw forbidden(`Unsigned URLs of origin ${name} need a w_ of ${allow.widths.join(", ")}.`);
}

/** An origin's original as a variant's source: its bytes in hand, named by their digest. */
function originSource(
  context: PipelineContext,
  original: Original,
  signal: AbortSignal | undefined,
): VariantSource {
  return {
    encode: (candidate) =>
      runCodec(context, {
        input: original.data,
        // The original's digest names its bytes, so the codec may keep it decoded like a stored image.
        sourceKey: `origin/${original.version}`,
        steps: candidate.steps,
        output: candidateOutput(candidate),
        onError: { field: "path" },
        memory: { size: original, field: "path", frames: original.frames, signal },
      }).catch((error: unknown) => {
        if (isImagePipelineError(error) && error.code === ErrorCodes.INVALID_IMAGE) {
          throw new ImagePipelineError(ErrorCodes.ORIGIN_ERROR, "The origin's image could not be decoded.", {
            cause: error,
          });
        }
        throw error;
      }),
    size: original.data.byteLength,
    format: original.format,
    bytes: async () => original.data,
  };
}

/** Every origin with a source: configured ones with their settings, the others with the defaults. */
function configuredOrigins(
  sources: Readonly<Record<string, OriginSource>>,
  options: ResolvedDeliveryOptions,
): Map<string, ConfiguredOrigin> {
  const origins = new Map<string, ConfiguredOrigin>();
  for (const [name, source] of Object.entries(sources)) {
    if (!Object.hasOwn(options.origins, name))
      origins.set(name, { source, settings: originSettingsSchema.parse({}) });
  }
  for (const [name, settings] of Object.entries(options.origins)) {
    const source = sources[name];
    if (source === undefined) {
      throw new ImagePipelineError(
        ErrorCodes.INVALID_CONFIGURATION,
        `delivery.origins.${name} has no origin source (pass one as origins.${name}).`,
      );
    }
    origins.set(name, { source, settings });
  }
  return origins;
}

/** Checks an origin URL's signature (remembering verified ones, bounded) or its unsigned allow-list. */
function createOriginVerifier(signer: VariantSigner | undefined) {
  // Only passes are kept; `get` (not `has`) so a hit counts as a use.
  const verified = new LruMap<string, true>({ maxEntries: 10_000 });
  return async (
    request: OriginVariantRequest,
    settings: ResolvedOriginSettings,
    tokens: string[],
    ext: string,
  ) => {
    const signed = `/o/${request.origin}/${request.modifiers}/${request.path}`;
    if (request.signature === "_") return checkUnsigned(settings, request.origin, tokens, ext);
    if (verified.get(`${request.signature}${signed}`) !== undefined) return;
    if (signer === undefined || !(await signer.verify(signed, request.signature))) {
      throw forbidden("The variant URL's signature is not valid.");
    }
    verified.set(`${request.signature}${signed}`, true);
  };
}

export function createOriginDelivery(
  context: PipelineContext,
  dependencies: OriginDeliveryDependencies,
  options: ResolvedDeliveryOptions,
): OriginDelivery {
  const origins = configuredOrigins(dependencies.sources, options);
  const originals = createOriginals(context, origins, dependencies.originals);
  const cachedOrComputed = createSingleFlight(dependencies.cache, dependencies.reserveMiss);
  const etagOf = createEtags();
  const verify = createOriginVerifier(dependencies.signer);
  const planned = createVariantPlanner(context, options);

  async function deliver(request: OriginVariantRequest): Promise<DeliveredVariant> {
    const origin = ORIGIN_NAME_PATTERN.test(request.origin) ? origins.get(request.origin) : undefined;
    if (origin === undefined) {
      throw new ImagePipelineError(ErrorCodes.ORIGIN_NOT_FOUND, `No origin is named ${request.origin}.`);
    }
    const path = parseOriginPath(request.path);
    const tokens = request.modifiers === "_" ? [] : request.modifiers.split(",");
    const canonical = canonicalModifiers(tokens) || "_";
    // One spelling per variant, so a CDN in front never keeps the same picture under two keys.
    if (canonical !== request.modifiers) {
      throw new ImagePipelineError(
        ErrorCodes.ROUTE_NOT_FOUND,
        `Variant URLs have one spelling: ${canonical} (modifiers in canonical order), not ${request.modifiers}.`,
      );
    }
    // The signature first: a forged URL costs an HMAC, never a fetch.
    await verify(request, origin.settings, tokens, path.ext);
    const modifiers = expandModifiers(tokens, options, context.clock);
    // A hit needs the original's header only; its bytes are read for a miss.
    const header =
      originals.freshHeader(request.origin, path.segments) ??
      (await originals.get(request.origin, path.segments, request.signal));
    const account = origin.settings.account;
    const file = `${request.modifiers}.${path.ext}`;
    const url = applyClientHints(
      { modifiers, ext: path.ext as Extension, tokens, file },
      request.hints,
      header,
    );
    const { plan, cacheId, key } = await planned(
      url,
      { origin: request.origin, path: path.raw, header },
      request.accept,
    );
    const { variant, state } = await cachedOrComputed(cacheId, account, key, async () => {
      const original =
        "data" in header
          ? (header as Original)
          : await originals.get(request.origin, path.segments, request.signal);
      return computeVariant(
        dependencies.gate,
        plan,
        originSource(context, original, request.signal),
        request.signal,
      );
    });
    const maxAge =
      modifiers.exp === undefined
        ? `public, max-age=${header.freshSeconds}`
        : `private, max-age=${Math.max(0, Math.min(modifiers.exp - Math.floor(context.clock.now().getTime() / 1000), header.freshSeconds))}`;
    return {
      data: variant.data,
      contentType: variant.contentType,
      etag: await etagOf(variant.data),
      cacheControl: maxAge,
      varyAccept: plan.auto,
      vary: [...(plan.auto ? ["Accept"] : []), ...(url.hintedWidth === undefined ? [] : CLIENT_HINT_HEADERS)],
      cache: state,
    };
  }

  return { deliver };
}
