import { validationError } from "../errors.js";
import type { ImageRecord } from "../image.js";
import type { ResolvedVariantUrl } from "./variant-request.js";

/*
 * `w_auto` (and `w_auto:{fallback}`): the width comes from the browser's client hints, snapped to
 * a bounded set of widths so arbitrary hints cannot fill the cache with near-identical variants.
 */

/** The request headers `w_auto` reads, as `Accept-CH` advertises them and `Vary` names them. */
export const CLIENT_HINT_HEADERS = ["Sec-CH-Width", "Width", "Sec-CH-DPR", "DPR"] as const;

/** Hinted widths are rounded up to a multiple of this (and never above the source's width). */
export const HINTED_WIDTH_STEP = 100;

/** The client hints of a request, as sent (invalid ones are ignored, never refused). */
export interface ClientHints {
  /** `Sec-CH-Width`, else `Width`: the image's display width in device pixels. */
  width?: string | undefined;
  /** `Sec-CH-DPR`, else `DPR`: device pixels per CSS pixel. */
  dpr?: string | undefined;
}

/** A hint's number when it is one within [min, max], else undefined. */
function hintNumber(value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  const number = Number(value);
  return number >= min && number <= max ? number : undefined;
}

/**
 * `url` with `w_auto` replaced by the width the hints ask: the `Width` hint (device pixels), else
 * the fallback width (else the source's) times the `DPR` hint (else `dpr_`, else 1); then rounded
 * up to a multiple of {@link HINTED_WIDTH_STEP} and capped at the source's width (at 10,000 with
 * `enlarge_1`). Unchanged without `w_auto`.
 */
export function applyClientHints<Url extends Pick<ResolvedVariantUrl, "modifiers" | "hintedWidth">>(
  url: Url,
  hints: ClientHints | undefined,
  source: Pick<ImageRecord, "width">,
): Url & Pick<ResolvedVariantUrl, "hintedWidth"> {
  const { autoWidth, ...modifiers } = url.modifiers;
  if (autoWidth === undefined) return url;
  if (modifiers.h !== undefined) {
    throw validationError([
      { path: `h_${modifiers.h}`, message: "cannot be combined with w_auto (the hints set the width)" },
    ]);
  }
  const hintedWidth = hintNumber(hints?.width, 1, 100_000);
  const dpr = hintNumber(hints?.dpr, 0.1, 10) ?? modifiers.dpr ?? 1;
  const wanted = hintedWidth ?? (autoWidth.fallback ?? source.width) * Math.min(4, Math.max(1, dpr));
  const cap = modifiers.enlarge === true ? 10_000 : source.width;
  const width = Math.max(1, Math.min(cap, Math.ceil(wanted / HINTED_WIDTH_STEP) * HINTED_WIDTH_STEP));
  return { ...url, modifiers: { ...modifiers, w: width, dpr: undefined }, hintedWidth: width };
}
