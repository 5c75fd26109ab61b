import {
  formatFromSpelling,
  formatHasAlpha,
  type ImageFormat,
  type ImageRecord,
  MIME_TYPES,
} from "../image.js";
import type { PipelineContext } from "./context.js";
import type { Extension } from "./variant-url.js";

/*
 * The output format of a variant: the URL's extension, or for `auto` negotiated from `Accept`, and
 * whether the stored original may stand in for it.
 */

/** Whether `accept` lists `type` (with a q above 0). */
function accepts(accept: string | undefined, type: string): boolean {
  if (accept === undefined) return false;
  return accept.split(",").some((part) => {
    const [name, ...parameters] = part.trim().toLowerCase().split(";");
    if (name?.trim() !== type) return false;
    const q = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith("q="));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/**
 * Whether the stored original may stand in for a variant asked as `ext`: the same format, or for
 * `auto` a format every browser shows (JPEG, PNG, GIF) or one the `Accept` header lists.
 */
export function originalAcceptable(ext: Extension, accept: string | undefined, source: ImageRecord): boolean {
  if (ext !== "auto") return (ext === "jpg" ? "jpeg" : ext) === source.format;
  if (source.format === "jpeg" || source.format === "png" || source.format === "gif") return true;
  return source.format !== "tiff" && accepts(accept, MIME_TYPES[source.format]);
}

/** The formats `auto` chooses among, for one source and one `Accept` class. */
export interface AutoFormats {
  /** AVIF and WebP the request accepts and the codec writes within their output limits, each tried once. */
  modern: ImageFormat[];
  /**
   * What every browser shows, for a source that none of `modern` was made of or may be smaller
   * in: the source's own format (PNG for a transparent one, JPEG for a format browsers do not
   * show), its own animated format for an animation; none when an animation can only stay
   * animated in WebP.
   */
  fallback: ImageFormat | undefined;
}

/**
 * The formats `auto` may answer: AVIF (stills only), then WebP, when `Accept` lists them, the
 * codec writes them and the output fits their limit (`fits`), and the source's own as a fallback.
 * An animation stays animated: WebP when the codec animates it, else the source's own animated
 * format. Every candidate keeps a transparent source's alpha (AVIF, WebP, PNG, GIF have one).
 */
export function autoFormats(
  accept: string | undefined,
  source: ImageRecord,
  context: PipelineContext,
  fits: (format: ImageFormat) => boolean,
): AutoFormats {
  const { outputFormats, animation = [] } = context.codec.capabilities;
  const acceptable = (format: ImageFormat) => accepts(accept, MIME_TYPES[format]) && fits(format);
  const animated = (source.frames ?? 1) > 1;
  const animatedWebp = animation.includes("webp") && acceptable("webp");
  if (animated && (animatedWebp || animation.includes(source.format))) {
    return {
      modern: animatedWebp ? ["webp"] : [],
      fallback: animation.includes(source.format) ? source.format : undefined,
    };
  }
  const modern = (["avif", "webp"] as const).filter(
    (format) => outputFormats.includes(format) && acceptable(format) && !(animated && format === "avif"),
  );
  const hasAlpha = source.facts?.hasAlpha ?? formatHasAlpha(source.format);
  if (hasAlpha) return { modern, fallback: source.format === "gif" ? "gif" : "png" };
  const shown: ImageFormat[] = ["jpeg", "png", "webp", "gif"];
  return { modern, fallback: shown.includes(source.format) ? source.format : "jpeg" };
}

/** The format an explicit extension names. */
export function extensionFormat(ext: Exclude<Extension, "auto">): ImageFormat {
  return formatFromSpelling(ext) as ImageFormat;
}
