import { tokenKey } from "./signing.js";

/**
 * The widths a `srcset` lists: each given width once, and given `sourceWidth` (the image's width in
 * px), none above it: the server does not upscale, so such an entry would promise pixels it never
 * sends. When some widths are above it, the source's own width stands for them, once. With
 * `enlarge_1` among the modifiers every width is kept.
 */
export function srcsetWidths(
  widths: readonly number[],
  sourceWidth: number | undefined,
  modifiers: readonly string[] | undefined,
): number[] {
  if (sourceWidth !== undefined && !(Number.isInteger(sourceWidth) && sourceWidth >= 1)) {
    throw new TypeError("sourceWidth must be a positive integer.");
  }
  const unique = [...new Set(widths)];
  if (sourceWidth === undefined || (modifiers ?? []).includes("enlarge_1")) return unique;
  const within = unique.filter((width) => width <= sourceWidth);
  return within.length === unique.length ? within : [...new Set([...within, sourceWidth])];
}

/** `modifiers` with its `w_` token (if any) replaced by `w_{width}`. */
export function withWidth(modifiers: readonly string[] | undefined, width: number): string[] {
  return [...(modifiers ?? []).filter((token) => tokenKey(token) !== "w"), `w_${width}`];
}
