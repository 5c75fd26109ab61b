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
 */
export function measureSkew(grey: Uint8Array, width: number, height: number, maxDegrees = 3): number {
  const step = Math.max(1, Math.ceil(Math.max(width, height) / 1000));
  const xs: number[] = [];
  const ys: number[] = [];
  for (let y = 0; y < height; y += step) {
    const row = y * width;
    for (let x = 0; x < width; x += step) {
      if (grey[row + x]! <= 128) {
        xs.push(x);
        ys.push(y);
      }
    }
  }
  if (xs.length < 200) return 0;
  const bins = Math.ceil((height + width * Math.tan((maxDegrees * Math.PI) / 180) * 2) / step) + 2;
  const offset = width * Math.tan((maxDegrees * Math.PI) / 180);
  const histogram = new Float64Array(bins);
  let best = { angle: 0, score: -1 };
  for (let tenth = -maxDegrees * 10; tenth <= maxDegrees * 10; tenth += 1) {
    const slope = Math.tan((tenth / 10) * (Math.PI / 180));
    histogram.fill(0);
    for (let index = 0; index < xs.length; index += 1) {
      const bin = Math.floor((ys[index]! - xs[index]! * slope + offset) / step);
      histogram[bin]! += 1;
    }
    let score = 0;
    for (let bin = 1; bin < bins; bin += 1) {
      const change = histogram[bin]! - histogram[bin - 1]!;
      score += change * change;
    }
    if (score > best.score) best = { angle: tenth / 10, score };
  }
  return best.angle;
}
