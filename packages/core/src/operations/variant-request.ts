import { ErrorCodes, ImagePipelineError, validationError } from "../errors.js";
import { LruMap } from "../lru.js";
import type { Clock } from "../ports/clock.js";
import type { VariantSigner } from "../ports/variant-cache.js";
import { imagePathSchema, parseAll } from "../schemas.js";
import type { ResolvedDeliveryOptions, VariantRequest } from "./variant-options.js";
import {
  canonicalModifiers,
  EXTENSIONS,
  type Extension,
  expandPreset,
  type Modifiers,
  parseTokens,
  splitFile,
  tokenKey,
} from "./variant-url.js";

/*
 * A variant request's URL resolved before anything is loaded: its one canonical spelling checked,
 * its signature verified (an HMAC, never a decode, for a forged URL), its modifiers parsed, its
 * expiry checked and its preset expanded.
 */

/** A variant URL that passed every check that needs no image. */
export interface ResolvedVariantUrl {
  imageId: string;
  /** `{modifiers}.{ext}`, the canonical spelling the request used. */
  file: string;
  ext: Extension;
  /** The URL's tokens as written (canonical order). */
  tokens: string[];
  /** Parsed, with the preset's modifiers under the URL's own. */
  modifiers: Modifiers;
  /** The width `w_auto` resolved to from client hints (part of the cache key). */
  hintedWidth?: number;
}

export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  const digest = await globalThis.crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Splits the file and refuses any spelling but the canonical one (404 naming it). */
function canonicalFile(request: VariantRequest): { ext: Extension; tokens: string[]; file: string } {
  const parts = splitFile(request.file);
  if (parts === null || !EXTENSIONS.includes(parts.ext)) {
    throw validationError([{ path: request.file, message: `must end with .${EXTENSIONS.join(", .")}` }]);
  }
  const canonical = canonicalModifiers(parts.tokens);
  const file = `${canonical.length === 0 ? "_" : canonical}.${parts.ext}`;
  // One spelling per variant, so a CDN in front never keeps the same picture under two keys:
  // modifiers in canonical order (as the URL signer writes them) and a lower-case extension.
  if (request.file !== file) {
    throw new ImagePipelineError(
      ErrorCodes.ROUTE_NOT_FOUND,
      `Variant URLs have one spelling: ${file} (modifiers in canonical order, lower-case extension), not ${request.file}.`,
    );
  }
  return { ext: parts.ext as Extension, tokens: parts.tokens, file };
}

/**
 * A variant URL's modifiers parsed (422 naming every bad token), its expiry checked (403) and its
 * preset expanded under the URL's own modifiers.
 */
export function expandModifiers(
  tokens: readonly string[],
  options: ResolvedDeliveryOptions,
  clock: Clock,
): Modifiers {
  const modifiers = expandPreset(parseTokens(tokens, options.presets), options.presets);
  checkExpiry(modifiers, clock);
  return modifiers;
}

/** 403 once the URL's `exp_` has passed. */
function checkExpiry(modifiers: Modifiers, clock: Clock): void {
  if (modifiers.exp !== undefined && modifiers.exp * 1000 <= clock.now().getTime()) {
    throw new ImagePipelineError(ErrorCodes.FORBIDDEN, "The variant URL has expired.");
  }
}

/** The resolver of variant URLs, remembering the URLs it resolved (bounded). */
export function createVariantUrlResolver(
  signer: VariantSigner | undefined,
  options: ResolvedDeliveryOptions,
  clock: Clock,
): (request: VariantRequest) => Promise<ResolvedVariantUrl> {
  // Hits repeat the same URLs: Web Crypto's per-call overhead (HMAC) was 15 % of a hit's CPU in
  // bench/delivery.mjs, and parsing and canonicalising the URL again as much, so a URL that passed
  // is remembered whole (its expiry is checked on every use). Only passes are kept: a forged or
  // malformed URL costs its checks each time and takes no room.
  const resolved = new LruMap<string, ResolvedVariantUrl>({ maxEntries: 10_000 });
  const verify = async (signature: string, tokens: string[], signedPath: string) => {
    if (signature === "_") {
      const onlyPreset = tokens.length === 1 && tokenKey(tokens[0]!) === "p";
      if (!options.allowUnsigned && !onlyPreset) {
        throw new ImagePipelineError(
          ErrorCodes.FORBIDDEN,
          "Unsigned variant URLs may only name a preset (p_{name}); sign the URL.",
        );
      }
    } else if (signer === undefined || !(await signer.verify(signedPath, signature))) {
      throw new ImagePipelineError(ErrorCodes.FORBIDDEN, "The variant URL's signature is not valid.");
    }
  };
  return async (request) => {
    const memoKey = `${request.signature}/${request.imageId}/${request.file}`;
    const known = resolved.get(memoKey);
    if (known !== undefined) {
      checkExpiry(known.modifiers, clock);
      return known;
    }
    const imageId = parseAll([[imagePathSchema, { image_id: request.imageId }]] as const)[0].image_id;
    const { ext, tokens, file } = canonicalFile(request);
    // The signature first: a forged URL costs an HMAC, never a decode.
    await verify(request.signature, tokens, `/${imageId}/${file}`);
    const url = { imageId, file, ext, tokens, modifiers: expandModifiers(tokens, options, clock) };
    resolved.set(memoKey, url);
    return url;
  };
}
