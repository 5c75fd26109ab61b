/**
 * `@pixport/url-signer/next`: a Next.js image loader (`images.loaderFile`) that serves images of a
 * pixport origin through unsigned origin variant URLs.
 *
 * The default export reads `NEXT_PUBLIC_PIXPORT_URL` (pixport's public base URL) and
 * `NEXT_PUBLIC_PIXPORT_ORIGIN` (the origin a path `src` belongs to), which Next.js inlines at build
 * time; {@link createNextLoader} takes the same settings, and more, in code.
 *
 * @example
 * ```ts
 * // pixport-loader.ts, named by next.config's images: { loader: "custom", loaderFile: "./pixport-loader.ts" }
 * import { createNextLoader } from "@pixport/url-signer/next";
 *
 * export default createNextLoader({ base: "https://img.example.com", origin: "cms" });
 * // <Image src="/products/shoe.jpg" width={640} height={480} alt="" />
 * //   → https://img.example.com/v/_/o/cms/w_640/products/shoe.jpg.auto, and one URL per srcset width
 * ```
 */
import { type OriginLoaderConfig, originLoaderUrl } from "./loader.js";

export type { AutoQuality, LoaderQuality, OriginLoaderConfig } from "./loader.js";

/** What Next.js passes a loader (`ImageLoaderProps` of `next/image`). */
export interface NextLoaderProps {
  src: string;
  width: number;
  quality?: number;
}

/** A Next.js loader: `(props) => url`. */
export type NextLoader = (props: NextLoaderProps) => string;

/**
 * A Next.js loader over `config`. Keep the server's allow-list of the origin equal to (or a superset
 * of) Next's `images.deviceSizes` and `images.imageSizes`, the widths Next asks for, and of
 * `images.qualities`; or give them here as `widths`/`qualities` to round to them. `quality: "auto"`
 * (or `auto:{level}`) asks `q_auto` of every image without a quality prop, which the origin's
 * `qualities` must allow.
 */
export function createNextLoader(config: OriginLoaderConfig): NextLoader {
  return ({ src, width, quality }) => originLoaderUrl({ src, width, quality }, config);
}

/** The environment setting `name`, or undefined where there is no `process` (a browser bundle that did not inline it). */
function setting(read: () => string | undefined): string | undefined {
  try {
    return read() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The loader configured from `NEXT_PUBLIC_PIXPORT_URL` and `NEXT_PUBLIC_PIXPORT_ORIGIN`: name this
 * module (or a file re-exporting it) as `images.loaderFile`.
 */
export default function pixportLoader(props: NextLoaderProps): string {
  // Written out in full: Next.js inlines `process.env.NEXT_PUBLIC_*` only where it appears literally.
  const base = setting(() => process.env.NEXT_PUBLIC_PIXPORT_URL);
  const origin = setting(() => process.env.NEXT_PUBLIC_PIXPORT_ORIGIN);
  if (base === undefined) {
    throw new TypeError(
      "pixportLoader needs NEXT_PUBLIC_PIXPORT_URL (pixport's public base URL) at build time",
    );
  }
  return originLoaderUrl(props, { base, origin });
}
