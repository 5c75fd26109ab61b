import { meanSsim, type SsimReference, ssimReference, ssimScale } from "./ssim.js";

/*
 * Automatic quality (`q_auto`): the bounded search over a format's quality scale and the probe it
 * runs on, shared by the codecs that offer it. The codec encodes and decodes (it owns the encoders
 * and decoders); the search measures SSIM itself (ssim.ts) and needs only a pass or fail per quality.
 */

/** The visual-quality target of an automatic quality. */
export interface AutoQualityTarget {
  /**
   * The lowest mean SSIM the output may have against the rendered pixels at the output's size (both
   * flattened onto the output's background): {@link meanSsim}, ssim.js's `bezkrovny` mean SSIM on
   * luma after the reference implementation's downsampling to about 256 px on the shorter side, 0..1.
   */
  ssim: number;
  /** The lowest quality the search may answer, 1..100. */
  min: number;
  /** The highest quality the search may answer, 1..100; answered when nothing lower passes. */
  max: number;
}

/**
 * Most measured encodes of the search's probe. The search needs about three to come within a step
 * or two of quality; the output is then encoded at its answer (and once more when the output
 * measured lower than its probe predicted): at most five encodes in all.
 */
export const AUTO_QUALITY_PROBES = 3;

/** One measured quality. */
export interface QualityPoint {
  quality: number;
  ssim: number;
}

/** SSIM a correction aims above its shifted target ({@link correctedQuality}). */
const CORRECTION_MARGIN = 0.001;

/** Qualities to step from the one measured when no bracket is known yet. */
const FIRST_STEP = 20;

/**
 * The lowest quality in `[target.min, target.max]` found to pass `measure` (SSIM at least `ssim`,
 * by default `target.ssim`) in at most `probes` measurements, starting at `start` (the format's
 * default is a good first guess), then between the highest failing and the lowest passing quality
 * known: by linear interpolation of the SSIM when both ends were measured, else by extrapolation
 * (at most twice the last step) or a first step away from the one measured. SSIM grows with quality, though not strictly: the answer is the lowest quality
 * measured to pass, never one measured to fail, and `target.max` when none passed. `points` are
 * the measurements, for {@link correctedQuality}.
 */
export async function searchQuality(
  target: AutoQualityTarget,
  start: number,
  measure: (quality: number) => Promise<number>,
  probes = AUTO_QUALITY_PROBES,
): Promise<{ quality: number; points: QualityPoint[] }> {
  const { min, max } = qualityRange(target);
  const points: QualityPoint[] = [];
  const quality = await bracket(target.ssim, min, max, start, probes, async (quality) => {
    const ssim = await measure(quality);
    points.push({ quality, ssim });
    return ssim;
  });
  return { quality, points };
}

function qualityRange(target: AutoQualityTarget): { min: number; max: number } {
  const min = Math.max(1, Math.min(100, Math.round(target.min)));
  return { min, max: Math.max(min, Math.min(100, Math.round(target.max))) };
}

async function bracket(
  wanted: number,
  min: number,
  max: number,
  start: number,
  probes: number,
  measure: (quality: number) => Promise<number>,
): Promise<number> {
  // `low` failed (or lies below the range), `high` passed (or lies above it: not measured).
  let low: QualityPoint = { quality: min - 1, ssim: Number.NaN };
  let high: QualityPoint = { quality: max + 1, ssim: Number.NaN };
  let previous: QualityPoint | undefined;
  let next = Math.max(min, Math.min(max, Math.round(start)));
  for (let probe = 0; probe < probes && high.quality - low.quality > 1; probe += 1) {
    const point = { quality: next, ssim: await measure(next) };
    if (point.ssim >= wanted) high = point;
    else low = point;
    next = between(low, high, wanted, previous);
    previous = point;
  }
  return Math.min(max, high.quality);
}

/** Where the line through `a` and `b` reaches `wanted`, rounded up; NaN without a rising line. */
function secant(a: QualityPoint, b: QualityPoint, wanted: number): number {
  if (a.quality === b.quality || !Number.isFinite(a.ssim) || !Number.isFinite(b.ssim)) return Number.NaN;
  const slope = (b.ssim - a.ssim) / (b.quality - a.quality);
  // Rounded up: the lowest passing quality is wanted, and rounding down tends to fail once more.
  return slope > 0 ? Math.ceil(a.quality + (wanted - a.ssim) / slope) : Number.NaN;
}

/**
 * The next quality to measure strictly between `low` and `high`: interpolated between them when
 * both were measured, else extrapolated through the last two measurements, else a step away from
 * the one measured.
 */
function between(low: QualityPoint, high: QualityPoint, wanted: number, previous?: QualityPoint): number {
  let next = secant(low, high, wanted);
  const last = Number.isFinite(high.ssim) && !Number.isFinite(low.ssim) ? high : low;
  if (Number.isNaN(next) && previous !== undefined) {
    // SSIM flattens towards the top of the scale, so a line through two points overshoots: the
    // step out of the bracket is at most twice the last one.
    const reach = 2 * Math.abs(last.quality - previous.quality);
    next = Math.max(last.quality - reach, Math.min(last.quality + reach, secant(previous, last, wanted)));
  }
  if (Number.isNaN(next)) {
    next =
      Number.isFinite(low.ssim) || Number.isFinite(high.ssim)
        ? last.quality + (last === high ? -FIRST_STEP : FIRST_STEP)
        : Math.round((low.quality + high.quality) / 2);
  }
  return Math.max(low.quality + 1, Math.min(high.quality - 1, next));
}

/**
 * The quality to encode the whole output at once it measured `measured` at `quality` where its
 * probe measured `points`: the probe's SSIM is shifted by the difference (the output's own detail
 * where the probe's tiles had less), and the quality is where the shifted probe curve meets the
 * target (with a margin of 0.001, since nothing measures the answer): on the chord to the lowest
 * measured point that passes, else extrapolated from the two highest (up to `target.max`).
 * `quality` itself when the output passed.
 */
export function correctedQuality(
  target: AutoQualityTarget,
  points: readonly QualityPoint[],
  quality: number,
  measured: number,
): number {
  const { max } = qualityRange(target);
  const at = points.find((point) => point.quality === quality);
  if (measured >= target.ssim || at === undefined || quality >= max) return quality;
  const wanted = target.ssim + (at.ssim - measured);
  const sorted = [...points].sort((a, b) => a.quality - b.quality);
  const above = sorted.find((point) => point.quality > quality && point.ssim >= wanted);
  if (above !== undefined) {
    // On the chord from the highest measured point under it (at least `quality`'s), aimed a margin
    // above the shifted target: no encode measures this one (the five are spent), and the chord
    // alone left one photograph 0.0004 under its target; the next measured point that passes can
    // be 20 qualities up (AVIF's files at 90 are about twice those at 70).
    const below =
      sorted.filter((point) => point.quality >= quality && point.quality < above.quality).at(-1) ?? at;
    const aim = Math.min(above.ssim, wanted + CORRECTION_MARGIN);
    const chord =
      below.quality + ((aim - below.ssim) * (above.quality - below.quality)) / (above.ssim - below.ssim);
    return Math.max(quality + 1, Math.min(above.quality, Math.ceil(chord)));
  }
  // The two highest measured qualities give the slope to extrapolate from.
  const [first, second] = sorted.slice(-2);
  const slope =
    first !== undefined && second !== undefined && second.ssim > first.ssim
      ? (second.ssim - first.ssim) / (second.quality - first.quality)
      : 0;
  const last = sorted.at(-1) ?? at;
  if (slope <= 0) return max;
  return Math.max(quality + 1, Math.min(max, Math.ceil(last.quality + (wanted - last.ssim) / slope)));
}

/** Raw interleaved pixels: rows top to bottom, `channels` bytes per pixel. */
export interface PixelData {
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
}

/** Outputs up to this many pixels (128 x 128) are searched whole. */
const WHOLE_PROBE_PIXELS = 16_384;
/** Larger ones on about this fraction of their pixels. */
const PROBE_FRACTION = 8;

/**
 * Pixels the quality search measures for an output of `raw`'s size: the output itself up to
 * 16,384 px, else about an eighth of it: four tiles from the centres of its quadrants, joined two by
 * two. The tiles keep the output's own scale (a downscaled copy has more detail per pixel, so it
 * would ask a higher quality than the output needs) and sample the whole picture rather than its
 * centre only; each side is a multiple of 16 (the encoders' blocks), so the joins fall on block
 * edges. Each measured encode then costs about an eighth of a full one (more for the smallest
 * outputs, where an encode's fixed cost weighs); the whole output is measured once at the answer
 * and corrected (encodeAtAutoQuality), so a probe that reads high costs one encode, not the target.
 * On the photo corpus an eighth answered the bytes and SSIM a quarter did (bench/bytes.mjs), at
 * 0.8-0.9x its search time.
 */
export function qualityProbe(raw: PixelData): PixelData {
  if (raw.width * raw.height <= WHOLE_PROBE_PIXELS) return raw;
  const maxPixels = (raw.width * raw.height) / PROBE_FRACTION;
  const scale = Math.sqrt(maxPixels / (raw.width * raw.height));
  const tile = (side: number) => Math.max(16, Math.floor((side * scale) / 2 / 16) * 16);
  const tileWidth = Math.min(tile(raw.width), Math.floor(raw.width / 2));
  const tileHeight = Math.min(tile(raw.height), Math.floor(raw.height / 2));
  const width = tileWidth * 2;
  const height = tileHeight * 2;
  const { channels } = raw;
  const data = new Uint8Array(width * height * channels);
  for (const [column, row] of [
    [0, 0],
    [1, 0],
    [0, 1],
    [1, 1],
  ] as const) {
    // The tile centred in its quadrant of the output.
    const left = Math.floor(((column * 2 + 1) * raw.width) / 4 - tileWidth / 2);
    const top = Math.floor(((row * 2 + 1) * raw.height) / 4 - tileHeight / 2);
    for (let y = 0; y < tileHeight; y += 1) {
      const from = ((top + y) * raw.width + left) * channels;
      const to = ((row * tileHeight + y) * width + column * tileWidth) * channels;
      data.set(raw.data.subarray(from, from + tileWidth * channels), to);
    }
  }
  return { data, width, height, channels };
}

/** What {@link encodeAtAutoQuality} needs of a codec. */
export interface AutoQualityEncoder<Encoded> {
  /** Encodes `pixels` (the output or its probe) at `quality`. */
  encode(pixels: PixelData, quality: number): Promise<Encoded>;
  /** `pixels` (the output or its probe) as shown: flattened onto the output's background. */
  shown(pixels: PixelData): Promise<PixelData>;
  /** `encoded` decoded, as shown (flattened onto the output's background like {@link shown}). */
  decoded(encoded: Encoded): Promise<PixelData>;
}

/**
 * Encodes `pixels` at the lowest quality found to keep `target`, in at most five encodes: an output
 * up to the probe's size ({@link qualityProbe}) is searched whole in four measured encodes, the
 * answer being one of them; a larger one on its probe in three, then encoded whole at the answer
 * and measured, and encoded once more when it fell below the target ({@link correctedQuality}).
 */
export async function encodeAtAutoQuality<Encoded>(
  pixels: PixelData,
  target: AutoQualityTarget,
  start: number,
  encoder: AutoQualityEncoder<Encoded>,
): Promise<{ encoded: Encoded; quality: number }> {
  const probe = qualityProbe(pixels);
  const whole = probe === pixels;
  // A probe is measured at the whole output's scale (ssim.ts).
  const scale = ssimScale(pixels);
  const references = new Map<PixelData, Promise<SsimReference>>();
  const similarity = async (reference: PixelData, encoded: Encoded) => {
    let prepared = references.get(reference);
    if (prepared === undefined) {
      prepared = encoder.shown(reference).then((shown) => ssimReference(shown, scale));
      references.set(reference, prepared);
    }
    const [base, candidate] = await Promise.all([prepared, encoder.decoded(encoded)]);
    return meanSsim(base, candidate);
  };
  const encodes = new Map<number, Encoded>();
  const searched = await searchQuality(
    target,
    start,
    async (quality) => {
      const encoded = await encoder.encode(probe, quality);
      if (whole) encodes.set(quality, encoded);
      return await similarity(probe, encoded);
    },
    whole ? AUTO_QUALITY_PROBES + 1 : AUTO_QUALITY_PROBES,
  );
  let quality = searched.quality;
  let encoded = encodes.get(quality) ?? (await encoder.encode(pixels, quality));
  if (!whole) {
    const measured = await similarity(pixels, encoded);
    const corrected = correctedQuality(target, searched.points, quality, measured);
    if (corrected !== quality) {
      quality = corrected;
      encoded = await encoder.encode(pixels, quality);
    }
  }
  return { encoded, quality };
}
