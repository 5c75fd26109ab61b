/**
 * `@pixport/url-signer`: builds and checks pixport's variant URLs,
 * `{base}/v/{signature}/{image_id}/{modifiers}.{ext}`, with no dependency: HMAC-SHA256 through Web
 * Crypto (`globalThis.crypto.subtle`: every current browser, Node 20+, Deno, Bun, workers).
 *
 * The signature is base64url (no padding) of HMAC-SHA256, keyed by a server secret, over
 * `/{image_id}/{canonical modifiers}.{ext}`. Canonical modifiers are the comma-separated
 * `key_value` tokens sorted by key (then by the whole token), so two spellings of one variant sign,
 * and cache, as one.
 *
 * @example
 * ```ts
 * import { srcset, variantUrl } from "@pixport/url-signer";
 *
 * const base = "https://img.example.com";
 * const secret = "the server's delivery.signingKeys[0]";
 * const src = await variantUrl({ base, secret, imageId, modifiers: ["w_800", "fit_cover", "h_600"], ext: "auto" });
 * const set = await srcset({ base, secret, imageId, widths: [320, 640, 1280], ext: "auto" });
 * // <img src={src} srcset={set} sizes="100vw">
 * ```
 */

/** Output extensions of a variant URL; `auto` picks AVIF, WebP or the source's format from `Accept`. */
export type VariantExtension = "jpeg" | "jpg" | "png" | "webp" | "avif" | "gif" | "auto";

/** The key of a `key_value` token (the part before the first `_`). */
export function tokenKey(token: string): string {
  const index = token.indexOf("_");
  return index < 0 ? token : token.slice(0, index);
}

/**
 * The canonical form of modifiers (a list or a comma-separated string): empty tokens dropped,
 * sorted by key, then by the whole token; joined with commas.
 */
export function canonicalModifiers(modifiers: string | readonly string[]): string {
  const tokens = (typeof modifiers === "string" ? modifiers.split(",") : [...modifiers])
    .map((token) => token.trim())
    .filter((token) => token.length > 0);
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

/** What {@link variantUrl} needs. */
export interface VariantUrlOptions {
  /** The server's public storage base URL (no trailing slash needed). */
  base: string;
  /** The signing secret (the server's first `delivery.signingKeys` entry). */
  secret: string;
  imageId: string;
  /** `key_value` tokens, e.g. `["w_800", "fit_cover"]`, in any order. */
  modifiers?: string | readonly string[];
  ext?: VariantExtension;
  /** Adds an `exp_{unix seconds}` token: the URL stops working then (needed for private images). */
  expiresAt?: Date;
}

/** A signed variant URL. */
export async function variantUrl(options: VariantUrlOptions): Promise<string> {
  const tokens =
    typeof options.modifiers === "string" ? options.modifiers.split(",") : [...(options.modifiers ?? [])];
  if (options.expiresAt !== undefined) tokens.push(`exp_${Math.floor(options.expiresAt.getTime() / 1000)}`);
  const path = signedPath(options.imageId, tokens, options.ext ?? "auto");
  return `${options.base.replace(/\/+$/, "")}/v/${await sign(options.secret, path)}${path}`;
}

/**
 * A `srcset` value: one signed URL per width (`w_{width}` added to the modifiers), `{url} {width}w`.
 * Given `sourceWidth` (the image's width in px), no width above it is listed: the server does not
 * upscale, so such an entry would promise pixels it never sends. When every width is above it, the
 * source's own width is the one entry. With `enlarge_1` among the modifiers every width is kept.
 */
export async function srcset(
  options: Omit<VariantUrlOptions, "modifiers"> & {
    widths: readonly number[];
    modifiers?: readonly string[];
    /** The source image's width in px (the `width` of the image resource). */
    sourceWidth?: number;
  },
): Promise<string> {
  const { sourceWidth } = options;
  if (sourceWidth !== undefined && !(Number.isInteger(sourceWidth) && sourceWidth >= 1)) {
    throw new TypeError("sourceWidth must be a positive integer.");
  }
  let widths = [...new Set(options.widths)];
  if (sourceWidth !== undefined && !(options.modifiers ?? []).includes("enlarge_1")) {
    const within = widths.filter((width) => width <= sourceWidth);
    widths = within.length === widths.length ? within : [...new Set([...within, sourceWidth])];
  }
  const entries = await Promise.all(
    widths.map(async (width) => {
      const modifiers = [
        ...(options.modifiers ?? []).filter((token) => tokenKey(token) !== "w"),
        `w_${width}`,
      ];
      return `${await variantUrl({ ...options, modifiers })} ${width}w`;
    }),
  );
  return entries.join(", ");
}

/**
 * A signer over several secrets: the first signs, all verify (add the new secret first to rotate,
 * remove the old one once its URLs are gone). The shape of `@pixport/core`'s `VariantSigner` port.
 *
 * @example
 * ```ts
 * const signer = createVariantSigner([process.env.PIXPORT_DELIVERY_SIGNING_KEY!]);
 * const pipeline = createImagePipeline({ ...deps, variantSigner: signer });
 * ```
 */
export function createVariantSigner(secrets: readonly string[]): {
  sign(path: string): Promise<string>;
  verify(path: string, signature: string): Promise<boolean>;
} {
  const keys = secrets.filter((secret) => secret.length > 0);
  if (keys.length === 0) throw new TypeError("createVariantSigner needs at least one non-empty secret.");
  return {
    sign: (path) => sign(keys[0]!, path),
    verify: (path, signature) => verify(keys, path, signature),
  };
}
