/**
 * Variant URLs of images that live on a named origin (an HTTP server, an S3 bucket or a directory
 * the server is configured with): `{base}/v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`.
 */
import { canonicalModifiers, sign, type VariantExtension } from "./signing.js";
import { srcsetWidths, withWidth } from "./widths.js";

/** What {@link originVariantUrl} and {@link unsignedOriginUrl} need. */
export interface OriginVariantUrlOptions {
  /** The server's public storage base URL (no trailing slash needed). */
  base: string;
  /**
   * The signing secret (the server's first `delivery.signingKeys` entry). Omitted: the URL is
   * unsigned (`_`), which the server accepts only for an origin configured `unsigned`, within its
   * allow-list of widths, qualities and formats.
   */
  secret?: string;
  /** The origin's name in the server's `delivery.origins` (`[a-z0-9-]{1,32}`). */
  origin: string;
  /**
   * The image's path under the origin, not percent-encoded (`products/red shoe.jpg`), with its own
   * extension; a leading `/` is ignored. Each segment is encoded with `encodeURIComponent`.
   */
  path: string;
  /** `key_value` tokens, e.g. `["w_800", "q_70"]`, in any order. */
  modifiers?: string | readonly string[];
  /** The output format. @default "auto" */
  ext?: VariantExtension;
}

const ORIGIN_NAME = /^[a-z0-9-]{1,32}$/;

/**
 * `path` as the URL carries it: `/`-separated segments, each `encodeURIComponent`-encoded. Empty,
 * `.` and `..` segments are refused: the server would refuse them too, and a builder that passed
 * them on would hide the mistake until a page shows a broken image.
 */
export function encodeOriginPath(path: string): string {
  const segments = path.replace(/^\/+/, "").split("/");
  for (const segment of segments) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new TypeError(
        `expected a path of non-empty segments other than "." and ".." for path, received ${JSON.stringify(path)}`,
      );
    }
  }
  return segments.map((segment) => encodeURIComponent(segment)).join("/");
}

/** The signed part of an origin variant URL: `/o/{origin}/{canonical modifiers or _}/{path}.{ext}`. */
export function originSignedPath(
  origin: string,
  path: string,
  modifiers: string | readonly string[],
  ext: string,
): string {
  if (!ORIGIN_NAME.test(origin)) {
    throw new TypeError(`expected 1 to 32 of a-z, 0-9 and - for origin, received ${JSON.stringify(origin)}`);
  }
  const canonical = canonicalModifiers(modifiers);
  return `/o/${origin}/${canonical.length === 0 ? "_" : canonical}/${encodeOriginPath(path)}.${ext}`;
}

function join(base: string, signature: string, signedPath: string): string {
  return `${base.replace(/\/+$/, "")}/v/${signature}${signedPath}`;
}

/**
 * An origin variant URL, signed with `secret`, or unsigned (`_`) without one.
 *
 * @example
 * ```ts
 * const url = await originVariantUrl({ base, secret, origin: "cms", path: "products/shoe.jpg", modifiers: ["w_640"] });
 * // https://img.example.com/v/{signature}/o/cms/w_640/products/shoe.jpg.auto
 * ```
 */
export async function originVariantUrl(options: OriginVariantUrlOptions): Promise<string> {
  const path = originSignedPath(options.origin, options.path, options.modifiers ?? [], options.ext ?? "auto");
  if (options.secret === undefined) return join(options.base, "_", path);
  return join(options.base, await sign(options.secret, path), path);
}

/**
 * An unsigned origin variant URL (signature `_`), built synchronously: what a loader running in a
 * browser needs (Next.js loaders and unpic transformers return strings), with no secret to ship.
 * The server answers it only for an origin configured `unsigned`, within its allow-list.
 */
export function unsignedOriginUrl(options: Omit<OriginVariantUrlOptions, "secret">): string {
  return join(
    options.base,
    "_",
    originSignedPath(options.origin, options.path, options.modifiers ?? [], options.ext ?? "auto"),
  );
}

/** What {@link originSrcset} needs. */
export interface OriginSrcsetOptions extends Omit<OriginVariantUrlOptions, "modifiers"> {
  widths: readonly number[];
  modifiers?: readonly string[];
  /** The source image's width in px, when known: no width above it is listed. */
  sourceWidth?: number;
}

/**
 * A `srcset` value for an origin image: one URL per width (`w_{width}` added to the modifiers),
 * `{url} {width}w`, signed with `secret` or unsigned without one. `sourceWidth` and `enlarge_1`
 * work as in `srcset()`.
 */
export async function originSrcset(options: OriginSrcsetOptions): Promise<string> {
  const widths = srcsetWidths(options.widths, options.sourceWidth, options.modifiers);
  const entries = await Promise.all(
    widths.map(async (width) => {
      const url = await originVariantUrl({
        ...options,
        modifiers: withWidth(options.modifiers, askedWidth(options, width)),
      });
      return `${url} ${width}w`;
    }),
  );
  return entries.join(", ");
}

/**
 * The `w_` an entry's URL asks. An unsigned URL may ask only the origin's allow-listed widths
 * (which `widths` lists), so the entry standing for the widths above the source asks the smallest
 * of them: the server does not upscale and answers the source's own width, as the entry says.
 */
function askedWidth(options: OriginSrcsetOptions, width: number): number {
  if (options.secret !== undefined || options.widths.includes(width)) return width;
  return Math.min(...options.widths.filter((listed) => listed > width));
}
