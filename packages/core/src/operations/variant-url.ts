import { validationError } from "../errors.js";
import { BROWSER_FORMATS, type FormatSpelling, formatSpellings } from "../image.js";
import { POSITIONS } from "../schemas.js";
import { parseColor, type Rgba } from "../transforms/color.js";
import type { Position } from "../transforms/steps.js";
import { AUTO_QUALITY_LEVELS, type AutoQualityLevel } from "./quality-levels.js";

/*
 * Variant URLs: the `{modifiers}.{ext}` file of `GET /v/{signature}/{image_id}/{file}` split,
 * its tokens parsed and validated (w_, h_, fit_, pos_, dpr_, q_ and q_auto, rot_, flip_, blur_, crop_, bg_,
 * p_, exp_, enlarge_) and put in the one canonical order that is signed and cached. The steps are
 * in variant-steps.ts, the output format in variant-format.ts.
 */

/** What a variant URL may end with: every spelling of a format browsers show, or `auto`. */
export function variantExtensions(): [Extension, ...Extension[]] {
  const [first, ...rest] = BROWSER_FORMATS.flatMap((format) => formatSpellings([format]));
  return first === undefined ? ["auto"] : [first, ...rest, "auto"];
}
export const EXTENSIONS: readonly string[] = variantExtensions();
export type Extension = FormatSpelling<(typeof BROWSER_FORMATS)[number]> | "auto";
const FITS = ["fill", "contain", "cover", "inside"] as const;
/** The level of a bare `q_auto`. */
const DEFAULT_AUTO_QUALITY: AutoQualityLevel = "good";

/** Parsed modifiers. */
export interface Modifiers {
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
  /** `w_auto` / `w_auto:{fallback}`: the width from client hints (client-hints.ts). */
  autoWidth?: { fallback?: number };
  /** `q_auto` / `q_auto:{level}`: the quality chosen per image for the level's SSIM target. */
  autoQuality?: AutoQualityLevel;
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

/**
 * A token as the variant cache keys it: `q_auto:good` is `q_auto` (good is its default level).
 * Both spellings stay valid and are signed as written, but make one variant, cached once.
 */
export function cacheToken(token: string): string {
  return token === `q_auto:${DEFAULT_AUTO_QUALITY}` ? "q_auto" : token;
}

export function splitFile(file: string): { tokens: string[]; ext: string } | null {
  const dot = file.lastIndexOf(".");
  if (dot <= 0) return null;
  const body = file.slice(0, dot);
  return { tokens: body === "_" ? [] : body.split(","), ext: file.slice(dot + 1).toLowerCase() };
}

const integer = (value: string) => (/^-?\d+$/.test(value) ? Number(value) : Number.NaN);
const decimal = (value: string) => (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : Number.NaN);

/** Why a token was refused: the message of its issue. */
class Refusal {
  constructor(readonly message: string) {}
}
type TokenParser<T> = (value: string, presets: Readonly<Record<string, string>>) => T | Refusal;

const ranged =
  (parse: (value: string) => number, min: number, max: number, message: string): TokenParser<number> =>
  (value) => {
    const number = parse(value);
    return number >= min && number <= max ? number : new Refusal(message);
  };
const oneOf =
  <T extends string>(
    values: readonly T[],
    message = `must be one of: ${values.join(", ")}`,
  ): TokenParser<T> =>
  (value) =>
    (values as readonly string[]).includes(value) ? (value as T) : new Refusal(message);

function parseCrop(value: string): NonNullable<Modifiers["crop"]> | Refusal {
  const parts = value.split(":").map(integer);
  const [x1, y1, x2, y2] = parts as [number, number, number, number];
  if (parts.length !== 4 || parts.some((part) => !(part >= 0)) || x2 <= x1 || y2 <= y1) {
    return new Refusal("must be x1:y1:x2:y2, integers >= 0 with x2 > x1 and y2 > y1");
  }
  return { x1, y1, x2, y2 };
}

/** One parser per modifier key. */
const TOKEN_PARSERS: {
  [K in Exclude<keyof Modifiers, "autoWidth" | "autoQuality">]-?: TokenParser<NonNullable<Modifiers[K]>>;
} = {
  w: ranged(integer, 1, 10_000, "must be an integer between 1 and 10000"),
  h: ranged(integer, 1, 10_000, "must be an integer between 1 and 10000"),
  fit: oneOf(FITS),
  pos: oneOf(POSITIONS as readonly Position[]),
  dpr: ranged(decimal, 1, 4, "must be a number between 1 and 4"),
  q: ranged(integer, 1, 100, "must be an integer between 1 and 100"),
  rot: ranged(decimal, -360, 360, "must be a number of degrees between -360 and 360"),
  flip: oneOf(["h", "v", "both"] as const),
  blur: ranged(decimal, 1, 1000, "must be a number between 1 and 1000"),
  crop: parseCrop,
  bg: (value) =>
    parseColor(/^[0-9a-f]{3,8}$/i.test(value) ? `#${value}` : value) ??
    new Refusal("must be a CSS colour name or hex digits (rgb, rrggbb, rrggbbaa) without #"),
  // Own keys only: `p_constructor` must not find Object.prototype's members.
  p: (value, presets) =>
    Object.hasOwn(presets, value) ? value : new Refusal("is not a preset of this server"),
  exp: (value) => {
    const number = integer(value);
    return number > 0 ? number : new Refusal("must be a unix time in seconds");
  },
  enlarge: (value) =>
    value === "1" ? true : new Refusal("must be enlarge_1 (allows a variant larger than its source)"),
};

/** `auto` or `auto:{fallback width}`: the fallback, or undefined for none. */
function parseAutoWidth(value: string): number | undefined | Refusal {
  if (value === "auto") return undefined;
  const fallback = integer(value.slice("auto:".length));
  return fallback >= 1 && fallback <= 10_000
    ? fallback
    : new Refusal("must be w_auto or w_auto:{fallback width}, an integer between 1 and 10000");
}

/** `auto` or `auto:{level}`: the level (`good` when none is named). */
function parseAutoQuality(value: string): AutoQualityLevel | Refusal {
  if (value === "auto") return DEFAULT_AUTO_QUALITY;
  const level = value.slice("auto:".length);
  return (AUTO_QUALITY_LEVELS as readonly string[]).includes(level)
    ? (level as AutoQualityLevel)
    : new Refusal(`must be q_auto or q_auto:{level}, a level of ${AUTO_QUALITY_LEVELS.join(", ")}`);
}

/** Parses tokens; every bad token is one issue named by the token itself. */
export function parseTokens(tokens: readonly string[], presets: Readonly<Record<string, string>>): Modifiers {
  const issues: { path: string; message: string }[] = [];
  const result: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const token of tokens) {
    const key = tokenKey(token);
    if (seen.has(key)) {
      issues.push({ path: token, message: `repeats ${key}_ (one of each)` });
      continue;
    }
    seen.add(key);
    if (key === "w" && /^auto(:|$)/.test(token.slice(2))) {
      const fallback = parseAutoWidth(token.slice(2));
      if (fallback instanceof Refusal) issues.push({ path: token, message: fallback.message });
      else result.autoWidth = fallback === undefined ? {} : { fallback };
      continue;
    }
    if (key === "q" && /^auto(:|$)/.test(token.slice(2))) {
      const level = parseAutoQuality(token.slice(2));
      if (level instanceof Refusal) issues.push({ path: token, message: level.message });
      else result.autoQuality = level;
      continue;
    }
    if (!Object.hasOwn(TOKEN_PARSERS, key)) {
      issues.push({
        path: token,
        message: "is not a modifier (w, h, fit, pos, dpr, q, rot, flip, blur, crop, bg, p, exp, enlarge)",
      });
      continue;
    }
    const parsed = TOKEN_PARSERS[key as keyof typeof TOKEN_PARSERS](token.slice(key.length + 1), presets);
    if (parsed instanceof Refusal) issues.push({ path: token, message: parsed.message });
    else result[key] = parsed;
  }
  if (issues.length > 0) throw validationError(issues);
  return result as Modifiers;
}

/** The modifier that set a variant's size (`w_`, `h_`, else `rot_`), to name in a 422; none without one. */
export function sizeToken(modifiers: Modifiers): string | undefined {
  if (modifiers.w !== undefined) return `w_${modifiers.w}`;
  if (modifiers.h !== undefined) return `h_${modifiers.h}`;
  if (modifiers.rot !== undefined && modifiers.rot % 360 !== 0) return `rot_${modifiers.rot}`;
  return undefined;
}

/** `modifiers` with the modifiers of the preset its `p_` names under its own. */
export function expandPreset(modifiers: Modifiers, presets: Readonly<Record<string, string>>): Modifiers {
  if (modifiers.p === undefined) return modifiers;
  return { ...parseTokens(presets[modifiers.p]!.split(","), {}), ...modifiers };
}
