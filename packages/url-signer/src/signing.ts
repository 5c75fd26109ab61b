/**
 * Canonical modifiers and HMAC-SHA256 signatures over Web Crypto: the primitives every URL builder
 * of `@pixport/url-signer` shares.
 */

/** Output extensions of a variant URL; `auto` picks AVIF, WebP or the source's format from `Accept`. */
export type VariantExtension = "jpeg" | "jpg" | "png" | "webp" | "avif" | "gif" | "auto";

/** The key of a `key_value` token (the part before the first `_`). */
export function tokenKey(token: string): string {
  const index = token.indexOf("_");
  return index < 0 ? token : token.slice(0, index);
}

/** Tokens written in their short spelling: the server takes both as one variant. */
const SHORT_SPELLINGS: ReadonlyMap<string, string> = new Map([["q_auto:good", "q_auto"]]);

/**
 * The canonical form of modifiers (a list or a comma-separated string): empty tokens dropped,
 * `q_auto:good` written `q_auto` (good is its default level), sorted by key, then by the whole
 * token; joined with commas.
 */
export function canonicalModifiers(modifiers: string | readonly string[]): string {
  const tokens = (typeof modifiers === "string" ? modifiers.split(",") : [...modifiers])
    .map((token) => token.trim())
    .filter((token) => token.length > 0)
    .map((token) => SHORT_SPELLINGS.get(token) ?? token);
  return tokens
    .sort((a, b) => {
      const byKey = compare(tokenKey(a), tokenKey(b));
      return byKey !== 0 ? byKey : compare(a, b);
    })
    .join(",");
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The signed part of a variant URL: `/{image_id}/{canonical modifiers}.{ext}`. */
export function signedPath(imageId: string, modifiers: string | readonly string[], ext: string): string {
  const canonical = canonicalModifiers(modifiers);
  return `/${imageId}/${canonical.length === 0 ? "_" : canonical}.${ext}`;
}

const encoder = new TextEncoder();
/** Web Crypto's key type, named without the DOM library (which this package does not compile against). */
type HmacKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;
const keyCache = new Map<string, Promise<HmacKey>>();

function hmacKey(secret: string): Promise<HmacKey> {
  let key = keyCache.get(secret);
  if (key === undefined) {
    key = globalThis.crypto.subtle.importKey(
      "raw",
      encoder.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    keyCache.set(secret, key);
    key.catch(() => keyCache.delete(secret));
  }
  return key;
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** base64url (no padding) of HMAC-SHA256 of `path` keyed by `secret`. */
export async function sign(secret: string, path: string): Promise<string> {
  if (secret.length === 0) throw new TypeError("The signing secret must not be empty.");
  const mac = await globalThis.crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(path));
  return base64url(new Uint8Array(mac));
}

/**
 * Whether `signature` signs `path` with one of `secrets` (all verify; the first is the one that
 * signs, so secrets rotate by adding the new one first). Constant-time per comparison.
 */
export async function verify(secrets: readonly string[], path: string, signature: string): Promise<boolean> {
  let valid = false;
  for (const secret of secrets) {
    const expected = await sign(secret, path);
    let difference = expected.length ^ signature.length;
    for (let index = 0; index < expected.length; index += 1) {
      difference |= expected.charCodeAt(index) ^ (signature.charCodeAt(index) || 0);
    }
    valid ||= difference === 0;
  }
  return valid;
}
