/**
 * The synchronous core of the framework loaders: an image `src` and a width become an unsigned
 * origin variant URL. Frameworks call loaders while rendering and expect a string back, so there
 * is no secret and no Web Crypto here: the origin must be configured `unsigned` on the server, and
 * the widths and qualities asked must be in its allow-list (the `widths`/`qualities` options below
 * round to it).
 */
import { unsignedOriginUrl } from "./origin.js";
import type { VariantExtension } from "./signing.js";

/** How a loader maps an image `src` to pixport. */
export interface OriginLoaderConfig {
  /** pixport's public base URL, e.g. `https://img.example.com`. */
  base: string;
  /** The origin a path `src` (`/products/shoe.jpg`) belongs to. */
  origin?: string;
  /**
   * Origins by the URL prefix their images live under, e.g. `{ cms: "https://cms.example.com/media/" }`:
   * an absolute `src` under a prefix maps to that origin, with the rest as its path (the longest
   * prefix wins).
   */
  origins?: Readonly<Record<string, string>>;
  /**
   * The origin's allow-list of widths: a width is rounded up to the nearest listed one (the largest
   * when above all), so every URL stays inside the list. Omitted: widths pass as asked.
   */
  widths?: readonly number[];
  /**
   * The origin's allow-list of qualities, as the server's: a number is rounded to the nearest
   * listed number; when only automatic qualities are listed, `quality` stands in for it (when
   * automatic, else no `q_` is sent). An automatic quality must be listed (`auto` and `auto:good`
   * are one) or the loader throws a TypeError naming it. Omitted: qualities pass as asked.
   */
  qualities?: readonly LoaderQuality[];
  /**
   * `q_` when the framework passes no quality: a number, or `auto` / `auto:{level}` for `q_auto`,
   * the quality chosen per image. Omitted: the server's default for the format.
   */
  quality?: LoaderQuality;
  /** The output format. @default "auto" */
  ext?: VariantExtension;
}

/** An automatic quality (`q_auto`, `q_auto:{level}`): `auto` is the level `good`. */
export type AutoQuality = "auto" | "auto:good" | "auto:best" | "auto:eco";
/** A quality a loader asks: a number 1..100, or automatic. */
export type LoaderQuality = number | AutoQuality;

const AUTO_QUALITIES: readonly string[] = ["auto", "auto:good", "auto:best", "auto:eco"];

/** Whether `value` is an automatic quality (`auto`, `auto:{level}`). */
export function isAutoQuality(value: unknown): value is AutoQuality {
  return typeof value === "string" && AUTO_QUALITIES.includes(value);
}

/** What one image asks of a loader. */
export interface OriginLoaderRequest {
  src: string;
  width?: number;
  quality?: LoaderQuality;
  ext?: VariantExtension;
}

const EXTENSIONS: readonly string[] = ["jpeg", "jpg", "png", "webp", "avif", "gif", "auto"];

/** Whether `value` is an output extension of a variant URL. */
export function isVariantExtension(value: unknown): value is VariantExtension {
  return typeof value === "string" && EXTENSIONS.includes(value);
}

function decodeSegments(path: string): string {
  return path
    .split("/")
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    })
    .join("/");
}

/** The origin and the (decoded) path under it that `src` names. */
export function resolveOriginSource(
  src: string,
  config: OriginLoaderConfig,
): { origin: string; path: string } {
  if (/[?#]/.test(src)) {
    throw new TypeError(`expected a src without query or fragment for src, received ${JSON.stringify(src)}`);
  }
  if (/^([a-z][a-z0-9+.-]*:)?\/\//i.test(src)) {
    let best: { origin: string; prefix: string } | undefined;
    for (const [origin, prefix] of Object.entries(config.origins ?? {})) {
      if (src.startsWith(prefix) && (best === undefined || prefix.length > best.prefix.length)) {
        best = { origin, prefix };
      }
    }
    if (best === undefined) {
      throw new TypeError(
        `expected a src under one of the configured origins (${Object.values(config.origins ?? {}).join(", ") || "none"}), received ${JSON.stringify(src)}`,
      );
    }
    return { origin: best.origin, path: decodeSegments(src.slice(best.prefix.length)) };
  }
  if (config.origin === undefined) {
    throw new TypeError(`a path src (${JSON.stringify(src)}) needs the loader's origin option`);
  }
  return { origin: config.origin, path: decodeSegments(src) };
}

/** The smallest listed value at or above `value`, or the largest listed one. */
function roundUp(list: readonly number[], value: number): number {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.find((candidate) => candidate >= value) ?? sorted[sorted.length - 1] ?? value;
}

/** The listed value nearest to `value` (the higher one on a tie). */
function nearest(list: readonly number[], value: number): number {
  let best = list[0] ?? value;
  for (const candidate of list) {
    const closer = Math.abs(candidate - value) - Math.abs(best - value);
    if (closer < 0 || (closer === 0 && candidate > best)) best = candidate;
  }
  return best;
}

/** The level an automatic quality names (`auto` is `auto:good`). */
const levelOf = (quality: AutoQuality) => (quality === "auto" ? "auto:good" : quality);

/** The `q_` of `asked` within the allow-list of `config`, or undefined for none. */
function qualityToken(asked: LoaderQuality | undefined, config: OriginLoaderConfig): string | undefined {
  if (asked === undefined) return undefined;
  const listed = config.qualities;
  if (typeof asked === "string") {
    if (
      listed?.length &&
      !listed.some((entry) => isAutoQuality(entry) && levelOf(entry) === levelOf(asked))
    ) {
      throw new TypeError(
        `expected a quality of the origin's allow-list (${listed.join(", ")}) for quality, received ${JSON.stringify(asked)}`,
      );
    }
    return `q_${asked}`;
  }
  if (!listed?.length) return `q_${Math.round(asked)}`;
  const numbers = listed.filter((entry) => typeof entry === "number");
  if (numbers.length > 0) return `q_${nearest(numbers, asked)}`;
  return typeof config.quality === "string" ? qualityToken(config.quality, config) : undefined;
}

/** The unsigned origin variant URL of one image at one width. */
export function originLoaderUrl(request: OriginLoaderRequest, config: OriginLoaderConfig): string {
  const { origin, path } = resolveOriginSource(request.src, config);
  const modifiers: string[] = [];
  if (request.width !== undefined) {
    const width = Math.round(request.width);
    modifiers.push(`w_${config.widths?.length ? roundUp(config.widths, width) : width}`);
  }
  const quality = qualityToken(request.quality ?? config.quality, config);
  if (quality !== undefined) modifiers.push(quality);
  return unsignedOriginUrl({
    base: config.base,
    origin,
    path,
    modifiers,
    ext: request.ext ?? config.ext ?? "auto",
  });
}
