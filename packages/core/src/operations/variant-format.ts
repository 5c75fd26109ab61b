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

/**
 * The output format of a variant: the extension's, or for `auto` AVIF, then WebP, then the
 * source's own (PNG when the source has transparency; JPEG for a source format browsers do not
 * show). An animation asks for WebP or GIF so it stays animated.
 */
export function chooseFormat(
  ext: Extension,
  accept: string | undefined,
  source: ImageRecord,
  context: PipelineContext,
  fits: (format: ImageFormat) => boolean = () => true,
): { format: ImageFormat; auto: boolean } {
  const { outputFormats, animation = [] } = context.codec.capabilities;
  if (ext !== "auto") return { format: formatFromSpelling(ext) as ImageFormat, auto: false };
  const animated = (source.frames ?? 1) > 1;
  // A format the output is too large for (`limits.maxOutputPixels`) is skipped.
  const webp = accepts(accept, "image/webp") && fits("webp");
  if (animated) {
    if (webp && animation.includes("webp")) return { format: "webp", auto: true };
    if (animation.includes(source.format)) return { format: source.format, auto: true };
  }
  if (!animated && accepts(accept, "image/avif") && outputFormats.includes("avif") && fits("avif"))
    return { format: "avif", auto: true };
  if (webp && outputFormats.includes("webp")) return { format: "webp", auto: true };
  const hasAlpha = source.facts?.hasAlpha ?? formatHasAlpha(source.format);
  if (hasAlpha) return { format: source.format === "gif" ? "gif" : "png", auto: true };
  const shown: ImageFormat[] = ["jpeg", "png", "webp", "gif"];
  return { format: shown.includes(source.format) ? source.format : "jpeg", auto: true };
}
