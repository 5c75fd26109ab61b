/**
 * `@pixport/url-signer/unpic`: an unpic URL transformer, so `@unpic/react` (and unpic's components
 * for Vue, Svelte, Solid, Qwik, Astro) render pixport origin variant URLs in `src` and `srcset`.
 *
 * @example
 * ```ts
 * import { Image } from "@unpic/react/base";
 * import { createUnpicTransformer } from "@pixport/url-signer/unpic";
 *
 * const transformer = createUnpicTransformer({ base: "https://img.example.com", origin: "cms" });
 * // <Image transformer={transformer} src="/products/shoe.jpg" width={640} height={480} alt="" />
 * ```
 */
import { isAutoQuality, isVariantExtension, type OriginLoaderConfig, originLoaderUrl } from "./loader.js";

export type { AutoQuality, LoaderQuality, OriginLoaderConfig } from "./loader.js";

/** The operations unpic passes a transformer (its `Operations`): numbers or numeric strings. */
export interface UnpicOperations {
  width?: number | string;
  height?: number | string;
  format?: string;
  quality?: number | string;
}

/** An unpic URL transformer (`TransformerFunction<Operations, undefined>` of `unpic`). */
export type UnpicTransformer = (src: string | URL, operations: UnpicOperations) => string;

function toNumber(value: number | string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const number = Number(value);
  return Number.isFinite(number) && number > 0 ? number : undefined;
}

/**
 * An unpic transformer over `config`. It sends the width (and quality, a number or `auto` /
 * `auto:{level}` for `q_auto`, and a format unpic's `<Source type>` asks for), never the height: the allow-list of an unsigned origin lists widths,
 * and unpic's own style (`object-fit: cover` at the layout's aspect ratio) crops on the page.
 */
export function createUnpicTransformer(config: OriginLoaderConfig): UnpicTransformer {
  return (src, operations) =>
    originLoaderUrl(
      {
        src: src.toString(),
        width: toNumber(operations.width),
        quality: isAutoQuality(operations.quality) ? operations.quality : toNumber(operations.quality),
        ext: isVariantExtension(operations.format) ? operations.format : undefined,
      },
      config,
    );
}
