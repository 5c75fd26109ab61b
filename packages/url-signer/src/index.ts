/**
 * `@pixport/url-signer`: builds and checks pixport's variant URLs,
 * `{base}/v/{signature}/{image_id}/{modifiers}.{ext}`, and origin variant URLs,
 * `{base}/v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`, with no dependency: HMAC-SHA256 through Web
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

import { sign, signedPath, type VariantExtension, verify } from "./signing.js";
import { srcsetWidths, withWidth } from "./widths.js";

export {
  encodeOriginPath,
  type OriginSrcsetOptions,
  type OriginVariantUrlOptions,
  originSignedPath,
  originSrcset,
  originVariantUrl,
  unsignedOriginUrl,
} from "./origin.js";
export {
  canonicalModifiers,
  sign,
  signedPath,
  tokenKey,
  type VariantExtension,
  verify,
} from "./signing.js";

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
  const widths = srcsetWidths(options.widths, options.sourceWidth, options.modifiers);
  const entries = await Promise.all(
    widths.map(async (width) => {
      const modifiers = withWidth(options.modifiers, width);
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
