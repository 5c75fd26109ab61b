/**
 * The skew of a photographed or scanned page, measured from its pixels: the angle at which the
 * rows of ink line up best (the projection profile is sharpest). Straightening the page before
 * recognition keeps ruling lines straight (so they are found whole) and text lines apart.
 */

/**
 * The page's skew in degrees within ±`maxDegrees` (0.1° steps), positive when the text runs
 * downhill to the right (as `sharp().rotate(+angle)` would turn a straight page), or 0 for a page
 * with too little ink to tell. Reads a greyscale page (ink at or below 128), sampled so that at
 * most about 1,000 columns and rows are looked at.
 *
 * Every sample's bin is `Math.floor((y - x * slope + offset) / step)`, computed with the same
 * floating-point operations in the same order as the first version, a loop over `number[]`s of
 * samples for each angle (7.7 ms on a 2400x1788 page, 4.2 ms now, the same angle on every page of
 * the OCR suite): the samples are kept in typed arrays by row, projected for two angles per pass,
 * and the quotient truncated where that is provably the same as rounding it down (see
 * {@link project}).
 */
export function measureSkew(grey: Uint8Array, width: number, height: number, maxDegrees = 3): number {
  const step = Math.max(1, Math.ceil(Math.max(width, height) / 1000));
  const ink = inkSamples(grey, width, height, step);
  if (ink.count < 200) return 0;
  const bins = Math.ceil((height + width * Math.tan((maxDegrees * Math.PI) / 180) * 2) / step) + 2;
  const offset = width * Math.tan((maxDegrees * Math.PI) / 180);
  // The angles in tenths of a degree, as the loop that went through them one at a time made them
  // (adding 1 at a time: with a fractional `maxDegrees`, they need not be whole).
  const tenths: number[] = [];
  for (let tenth = -maxDegrees * 10; tenth <= maxDegrees * 10; tenth += 1) tenths.push(tenth);
  const histogram = new Float64Array(bins);
  const other = new Float64Array(bins);
  let best = { angle: 0, score: -1 };
  for (let at = 0; at < tenths.length; at += 2) {
    const tenth = tenths[at]!;
    const slope = Math.tan((tenth / 10) * (Math.PI / 180));
    histogram.fill(0);
    if (at + 1 === tenths.length) {
      project(ink, offset, step, slope, histogram);
    } else {
      const otherSlope = Math.tan((tenths[at + 1]! / 10) * (Math.PI / 180));
      other.fill(0);
      project(ink, offset, step, slope, histogram, otherSlope, other);
    }
    // In angle order, as before: the first of equally sharp angles wins.
    let score = sharpness(histogram);
    if (score > best.score) best = { angle: tenth / 10, score };
    if (at + 1 < tenths.length) {
      score = sharpness(other);
      if (score > best.score) best = { angle: tenths[at + 1]! / 10, score };
    }
  }
  return best.angle;
}

/**
 * The ink pixels looked at (every `step`-th column of every `step`-th row), row by row: the
 * samples of the `r`-th row holding ink lie at `y = rowYs[r]`, their x in `xs` from `rowEnds[r - 1]`
 * (0 for the first) to `rowEnds[r]`. Typed arrays rather than growing `number[]`s, and no rows
 * without ink, so that the 61 passes over the samples read as little as can be.
 */
interface InkSamples {
  xs: Float64Array;
  rowYs: Float64Array;
  rowEnds: Int32Array;
  /** How many rows hold ink. */
  rows: number;
  /** How many samples are ink. */
  count: number;
  /** The largest x of an ink sample (the smallest is 0 or more). */
  maxX: number;
}

function inkSamples(grey: Uint8Array, width: number, height: number, step: number): InkSamples {
  let xs = new Float64Array(4096);
  let rowYs = new Float64Array(256);
  let rowEnds = new Int32Array(256);
  let count = 0;
  let rows = 0;
  let maxX = 0;
  for (let y = 0; y < height; y += step) {
    const row = y * width;
    const start = count;
    let x = 0;
    // Four samples at a time, skipped together when all are paper: a bitwise AND of levels is at
    // most each of them, so above 128 they all are (most of a page is paper: 0.4 ms less on a
    // 2400x1788 page than one at a time).
    for (; x + 3 * step < width; x += 4 * step) {
      const at = row + x;
      if ((grey[at]! & grey[at + step]! & grey[at + 2 * step]! & grey[at + 3 * step]!) > 128) continue;
      for (let column = x; column < x + 4 * step; column += step) {
        if (grey[row + column]! <= 128) {
          if (count === xs.length) xs = grown(xs);
          xs[count++] = column;
          maxX = Math.max(maxX, column);
        }
      }
    }
    for (; x < width; x += step) {
      if (grey[row + x]! <= 128) {
        if (count === xs.length) xs = grown(xs);
        xs[count++] = x;
        maxX = Math.max(maxX, x);
      }
    }
    if (count > start) {
      if (rows === rowYs.length) {
        rowYs = grown(rowYs);
        rowEnds = grown(rowEnds);
      }
      rowYs[rows] = y;
      rowEnds[rows] = count;
      rows += 1;
    }
  }
  return { xs, rowYs, rowEnds, rows, count, maxX };
}

/** A copy of `array` twice as long. */
function grown<T extends Float64Array | Int32Array>(array: T): T {
  const copy = new (array.constructor as new (length: number) => T)(array.length * 2);
  copy.set(array);
  return copy;
}

/**
 * Counts every ink sample into `histogram` at the bin `(y - x * slope + offset) / step` rounded
 * down, and (when given) into `other` at that of `otherSlope`: one pass for two angles reads each
 * sample and its row once for both (5.0 to 4.2 ms on a 2400x1788 page). A bin outside the histogram
 * is dropped, as a typed array drops the write.
 *
 * The quotient is truncated (`| 0`) when every sample's lies in [0, 2^31), where that is the same as
 * `Math.floor`, which V8 compiles to a rounding then a check that the result fits an integer (0.8 ms
 * more on that page). Whether every one does is known from four: each operation of the formula
 * keeps the order of its operands (IEEE 754 rounding is monotonic), so the quotient only grows with
 * y and, for a given slope, only grows or only shrinks with x: over the samples' bounding box it is
 * least and greatest at corners. Within ±90° that always holds (the offset lifts the lowest bin to
 * 0); past 90° it need not, and an angle whose corners fall outside is projected with `Math.floor`
 * itself.
 */
function project(
  ink: InkSamples,
  offset: number,
  step: number,
  slope: number,
  histogram: Float64Array,
  otherSlope?: number,
  other?: Float64Array,
): void {
  const { xs, rowYs, rowEnds, rows } = ink;
  if (otherSlope === undefined || other === undefined) {
    if (truncates(ink, offset, step, slope)) {
      let index = 0;
      for (let row = 0; row < rows; row += 1) {
        const y = rowYs[row]!;
        for (const end = rowEnds[row]!; index < end; index += 1) {
          histogram[((y - xs[index]! * slope + offset) / step) | 0]! += 1;
        }
      }
    } else {
      let index = 0;
      for (let row = 0; row < rows; row += 1) {
        const y = rowYs[row]!;
        for (const end = rowEnds[row]!; index < end; index += 1) {
          histogram[Math.floor((y - xs[index]! * slope + offset) / step)]! += 1;
        }
      }
    }
    return;
  }
  if (!truncates(ink, offset, step, slope) || !truncates(ink, offset, step, otherSlope)) {
    project(ink, offset, step, slope, histogram);
    project(ink, offset, step, otherSlope, other);
    return;
  }
  let index = 0;
  for (let row = 0; row < rows; row += 1) {
    const y = rowYs[row]!;
    for (const end = rowEnds[row]!; index < end; index += 1) {
      const x = xs[index]!;
      histogram[((y - x * slope + offset) / step) | 0]! += 1;
      other[((y - x * otherSlope + offset) / step) | 0]! += 1;
    }
  }
}

/** Whether `(y - x * slope + offset) / step` is in [0, 2^31) for every ink sample (see {@link project}). */
function truncates(ink: InkSamples, offset: number, step: number, slope: number): boolean {
  const top = ink.rowYs[0]!;
  const bottom = ink.rowYs[ink.rows - 1]!;
  const corners = [
    (top - 0 * slope + offset) / step,
    (top - ink.maxX * slope + offset) / step,
    (bottom - 0 * slope + offset) / step,
    (bottom - ink.maxX * slope + offset) / step,
  ];
  // NaN fails both comparisons.
  return Math.min(...corners) >= 0 && Math.max(...corners) < 2 ** 31;
}

/** How sharp a projection profile is: the sum of the squared changes between neighbouring bins. */
function sharpness(histogram: Float64Array): number {
  let score = 0;
  for (let bin = 1; bin < histogram.length; bin += 1) {
    const change = histogram[bin]! - histogram[bin - 1]!;
    score += change * change;
  }
  return score;
}
