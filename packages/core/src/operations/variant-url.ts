import { validationError } from "../errors.js";
import {
  BROWSER_FORMATS,
  type FormatSpelling,
  formatFromSpelling,
  formatHasAlpha,
  formatSpellings,
  type ImageFormat,
  type ImageRecord,
  MIME_TYPES,
} from "../image.js";
import { POSITIONS } from "../schemas.js";
import { BLACK, parseColor, type Rgba, TRANSPARENT } from "../transforms/color.js";
import { blurSteps, planOutputSize, rotatedSize, type Size, stepOutputSize } from "../transforms/plan.js";
import type { Position, TransformStep } from "../transforms/steps.js";
import type { PipelineContext } from "./context.js";

/*
 * Variant URLs: the `{modifiers}.{ext}` file of `GET /v/{signature}/{image_id}/{file}` parsed and
 * validated (w_, h_, fit_, pos_, dpr_, q_, rot_, flip_, blur_, crop_, bg_, p_, exp_), put in the
 * one canonical order that is signed and cached, turned into codec steps, and the output format
 * chosen (`auto` from `Accept`).
 */

/** What a variant URL may end with: every spelling of a format browsers show, or `auto`. */
export function variantExtensions(): [Extension, ...Extension[]] {
  const [first, ...rest] = BROWSER_FORMATS.flatMap((format) => formatSpellings([format]));
  return first === undefined ? ["auto"] : [first, ...rest, "auto"];
}
export const EXTENSIONS: readonly string[] = variantExtensions();
export type Extension = FormatSpelling<(typeof BROWSER_FORMATS)[number]> | "auto";
const FITS = ["fill", "contain", "cover", "inside"] as const;

/** Parsed modifiers. */
interface Modifiers {
  w?: number;
  h?: number;
  fit?: (typeof FITS)[number];
  pos?: Position;
  dpr?: number;
  q?: number;
  rot?: number;
  flip?: "h" | "v" | "both";
  blur?: number;
  crop?: { x1: number; y1: number; x2: number; y2: number };
  bg?: Rgba;
  p?: string;
  exp?: number;
  /** `enlarge_1`: `w_`/`h_` may make the variant larger than its source. */
  enlarge?: true;
}

/** The key of a `key_value` token. */
export function tokenKey(token: string): string {
  const index = token.indexOf("_");
  return index < 0 ? token : token.slice(0, index);
}

/** Canonical order: by key, then by token (the same rule as `@pixport/url-signer`). */
export function canonicalModifiers(tokens: readonly string[]): string {
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...tokens]
    .filter((token) => token.length > 0)
    .sort((a, b) => compare(tokenKey(a), tokenKey(b)) || compare(a, b))
    .join(",");
}

export function splitFile(file: string): { tokens: string[]; ext: string } | null {
  const dot = file.lastIndexOf(".");
  if (dot <= 0) return null;
  const body = file.slice(0, dot);
  return { tokens: body === "_" ? [] : body.split(","), ext: file.slice(dot + 1).toLowerCase() };
}

const integer = (value: string) => (/^-?\d+$/.test(value) ? Number(value) : Number.NaN);
const decimal = (value: string) => (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN);

/** Parses tokens; every bad token is one issue named by the token itself. */
export function parseTokens(tokens: readonly string[], presets: Readonly<Record<string, string>>): Modifiers {
  const issues: { path: string; message: string }[] = [];
  const result: Modifiers = {};
  const seen = new Set<string>();
  for (const token of tokens) {
    const key = tokenKey(token);
    const value = token.slice(key.length + 1);
    const bad = (message: string) => issues.push({ path: token, message });
    if (seen.has(key)) {
      bad(`repeats ${key}_ (one of each)`);
      continue;
    }
    seen.add(key);
    switch (key) {
      case "w":
      case "h": {
        const number = integer(value);
        if (!(number >= 1 && number <= 10_000)) bad("must be an integer between 1 and 10000");
        else result[key] = number;
        break;
      }
      case "fit":
        if (!(FITS as readonly string[]).includes(value)) bad(`must be one of: ${FITS.join(", ")}`);
        else result.fit = value as Modifiers["fit"];
        break;
      case "pos":
        if (!(POSITIONS as readonly string[]).includes(value)) bad(`must be one of: ${POSITIONS.join(", ")}`);
        else result.pos = value as Position;
        break;
      case "dpr": {
        const number = decimal(value);
        if (!(number >= 1 && number <= 4)) bad("must be a number between 1 and 4");
        else result.dpr = number;
        break;
      }
      case "q": {
        const number = integer(value);
        if (!(number >= 1 && number <= 100)) bad("must be an integer between 1 and 100");
        else result.q = number;
        break;
      }
      case "rot": {
        const number = decimal(value);
        if (!(Number.isFinite(number) && Math.abs(number) <= 360))
          bad("must be a number of degrees between -360 and 360");
        else result.rot = number;
        break;
      }
      case "flip":
        if (value !== "h" && value !== "v" && value !== "both") bad("must be one of: h, v, both");
        else result.flip = value;
        break;
      case "blur": {
        const number = decimal(value);
        if (!(number >= 1 && number <= 1000)) bad("must be a number between 1 and 1000");
        else result.blur = number;
        break;
      }
      case "crop": {
        const parts = value.split(":").map(integer);
        const [x1, y1, x2, y2] = parts as [number, number, number, number];
        if (parts.length !== 4 || parts.some((part) => !(part >= 0)) || x2 <= x1 || y2 <= y1) {
          bad("must be x1:y1:x2:y2, integers >= 0 with x2 > x1 and y2 > y1");
        } else result.crop = { x1, y1, x2, y2 };
        break;
      }
      case "bg": {
        const color = parseColor(/^[0-9a-f]{3,8}$/i.test(value) ? `#${value}` : value);
        if (color === null) bad("must be a CSS colour name or hex digits (rgb, rrggbb, rrggbbaa) without #");
        else result.bg = color;
        break;
      }
      case "p":
        // Own keys only: `p_constructor` must not find Object.prototype's members.
        if (!Object.hasOwn(presets, value)) bad("is not a preset of this server");
        else result.p = value;
        break;
      case "exp": {
        const number = integer(value);
        if (!(number > 0)) bad("must be a unix time in seconds");
        else result.exp = number;
        break;
      }
      case "enlarge":
        if (value !== "1") bad("must be enlarge_1 (allows a variant larger than its source)");
        else result.enlarge = true;
        break;
      default:
        bad("is not a modifier (w, h, fit, pos, dpr, q, rot, flip, blur, crop, bg, p, exp, enlarge)");
    }
  }
  if (issues.length > 0) throw validationError(issues);
  return result;
}

/** The transform steps of a variant, in a fixed order: crop, rotate, flip, resize, blur. */
export function variantSteps(
  modifiers: Modifiers,
  source: Size,
  output: ImageFormat,
  maxOutputSide: number,
): TransformStep[] {
  const steps: TransformStep[] = [];
  const issues: { path: string; message: string }[] = [];
  let size = source;
  const background = modifiers.bg ?? (formatHasAlpha(output) ? TRANSPARENT : BLACK);
  const opaqueBackground = formatHasAlpha(output) ? background : { ...background, alpha: 1 };
  if (modifiers.crop !== undefined) {
    const { x1, y1, x2, y2 } = modifiers.crop;
    if (x2 > size.width || y2 > size.height) {
      issues.push({
        path: `crop_${x1}:${y1}:${x2}:${y2}`,
        message: `must lie inside the ${size.width} x ${size.height} image`,
      });
    } else {
      steps.push({ type: "crop", left: x1, top: y1, width: x2 - x1, height: y2 - y1 });
      size = { width: x2 - x1, height: y2 - y1 };
    }
  }
  if (modifiers.rot !== undefined && modifiers.rot % 360 !== 0) {
    const angle = ((modifiers.rot % 360) + 360) % 360;
    steps.push({ type: "rotate", angle, background: opaqueBackground });
    size = rotatedSize(size, angle);
  }
  if (modifiers.flip !== undefined) {
    const mode = modifiers.flip === "h" ? "horizontal" : modifiers.flip === "v" ? "vertical" : "both";
    steps.push({ type: "mirror", mode });
  }
  const dpr = modifiers.dpr ?? 1;
  if (modifiers.w !== undefined || modifiers.h !== undefined) {
    let width = modifiers.w === undefined ? undefined : Math.round(modifiers.w * dpr);
    let height = modifiers.h === undefined ? undefined : Math.round(modifiers.h * dpr);
    let fit = modifiers.fit ?? "cover";
    if (width !== undefined && height !== undefined && fit === "inside") {
      // The box bounds the output: without enlarge_1, the source's own size bounds it too.
      const factor = Math.min(width / size.width, height / size.height, modifiers.enlarge ? Infinity : 1);
      width = Math.max(1, Math.round(size.width * factor));
      height = Math.max(1, Math.round(size.height * factor));
      fit = "fill";
    } else if (modifiers.enlarge !== true) {
      // No upscaling unless asked: a box larger than the source shrinks, keeping its aspect
      // ratio, until it fits inside it (an upscaled variant has more bytes and no more detail).
      const shrink = Math.min(
        1,
        width === undefined ? 1 : size.width / width,
        height === undefined ? 1 : size.height / height,
      );
      if (width !== undefined) width = Math.max(1, Math.round(width * shrink));
      if (height !== undefined) height = Math.max(1, Math.round(height * shrink));
    }
    if (width === undefined || height === undefined) fit = "fill";
    width ??= Math.max(1, Math.round((size.width * height!) / size.height));
    height ??= Math.max(1, Math.round((size.height * width) / size.width));
    const position = modifiers.pos ?? "center";
    if ((position === "attention" || position === "entropy") && fit !== "cover") {
      issues.push({ path: `pos_${position}`, message: "needs fit_cover with both w_ and h_" });
    }
    const step: TransformStep = {
      type: "resize",
      width,
      height,
      fit: fit as "fill" | "contain" | "cover",
      position,
      background: opaqueBackground,
    };
    // A resize to the size the image already has changes nothing (every fit is the identity).
    if (width !== size.width || height !== size.height) {
      steps.push(step);
      size = stepOutputSize(step, size);
    }
  }
  if (modifiers.blur !== undefined) {
    steps.push(...blurSteps(modifiers.blur, size));
  }
  if (issues.length > 0) throw validationError(issues);
  planOutputSize(steps, source, maxOutputSide, (step) =>
    step.type === "resize" ? (modifiers.w !== undefined ? `w_${modifiers.w}` : `h_${modifiers.h}`) : "rot",
  );
  return steps;
}

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
/** The modifier that set a variant's size (`w_`, `h_`, else `rot_`), to name in a 422; none without one. */
export function sizeToken(modifiers: Modifiers): string | undefined {
  if (modifiers.w !== undefined) return `w_${modifiers.w}`;
  if (modifiers.h !== undefined) return `h_${modifiers.h}`;
  if (modifiers.rot !== undefined && modifiers.rot % 360 !== 0) return `rot_${modifiers.rot}`;
  return undefined;
}

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
