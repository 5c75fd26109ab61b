/** What the browser test reads of an `<img>` after it loaded. */
export interface RenderedImage {
  currentSrc: string;
  srcset: string;
  sizes: string;
  naturalWidth: number;
  /** `innerWidth`, what `vw` in `sizes` is a share of. */
  viewportWidth: number;
}

/** The URL and descriptor (`640w`, `2x`) of each candidate of a `srcset`. */
export function srcsetCandidates(srcset: string): { url: string; descriptor: string }[] {
  return srcset.split(/,\s+/).map((entry) => {
    const [url, descriptor] = entry.trim().split(/\s+/) as [string, string];
    return { url, descriptor: descriptor ?? "1x" };
  });
}

/** The width in CSS px that `sizes` gives the image: the pages use only `{n}vw` or none. */
function sourceSize(image: RenderedImage): number {
  const match = /^(\d+(?:\.\d+)?)vw$/.exec(image.sizes.trim());
  if (match === null) throw new TypeError(`expected sizes of the form {n}vw, received ${image.sizes}`);
  return (image.viewportWidth * Number(match[1])) / 100;
}

/**
 * The candidates a browser may pick for `dpr` (the HTML standard leaves the choice to the browser;
 * this is the rule browsers follow): by density (a `w` candidate's width over the source size),
 * the smallest candidate at or above `dpr`, or the largest one when none is; above 1x the
 * candidate just below it too (Chromium takes it when `dpr` is under the two densities' geometric
 * mean, saving bytes a dense screen barely shows).
 */
export function pickedBy(image: RenderedImage, dpr: number): string[] {
  const candidates = srcsetCandidates(image.srcset)
    .map(({ url, descriptor }) => ({
      url,
      density: descriptor.endsWith("w")
        ? Number.parseFloat(descriptor) / sourceSize(image)
        : Number.parseFloat(descriptor),
    }))
    .sort((a, b) => a.density - b.density);
  const above = candidates.findIndex((candidate) => candidate.density >= dpr);
  const index = above === -1 ? candidates.length - 1 : above;
  const allowed = [candidates[index]!.url];
  if (dpr > 1 && above > 0) allowed.push(candidates[index - 1]!.url);
  return allowed;
}
