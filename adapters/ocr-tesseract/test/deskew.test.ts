import { describe, expect, it } from "vitest";
import { measureSkew } from "../src/deskew.js";
import { seeded } from "./seeded.js";

/**
 * `measureSkew` as it was before it kept its samples in typed arrays by row and projected two
 * angles per pass (commit 80a32f2): the oracle the faster one must match, angle for angle.
 */
function referenceMeasureSkew(grey: Uint8Array, width: number, height: number, maxDegrees = 3): number {
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

const between = (random: () => number, from: number, to: number) =>
  from + Math.floor(random() * (to - from + 1));

/** Ink levels at and around the threshold (at or below 128 is ink), and plain ink. */
const INK = [0, 20, 127, 128];
const PAPER = [129, 130, 200, 255];

/**
 * A page of text lines drawn at `degrees` (positive running downhill to the right): each line
 * `lineHeight` px tall, a "word" of glyph strokes then a gap, lines `pitch` px apart, the page's
 * paper white or a light grey; inside a bigger buffer at `offset`.
 */
function textPage(random: () => number, width: number, height: number, degrees: number, offset = 0) {
  const grey = new Uint8Array(offset + width * height + 5).subarray(offset, offset + width * height);
  grey.fill(random() < 0.7 ? 255 : PAPER[between(random, 0, PAPER.length - 1)]!);
  const slope = Math.tan((degrees * Math.PI) / 180);
  const lineHeight = between(random, 6, Math.max(6, Math.floor(height / 40)));
  const pitch = lineHeight * 2 + between(random, 0, lineHeight);
  const ink = INK[between(random, 0, INK.length - 1)]!;
  for (let top = between(random, 0, pitch); top < height; top += pitch) {
    let x = between(random, 0, width / 8);
    const end = width - between(random, 0, width / 8);
    while (x < end) {
      const word = between(random, 10, 80);
      for (let column = x; column < Math.min(end, x + word); column++) {
        if (column % 4 === 3) continue; // the gaps between strokes
        const y0 = Math.round(top + column * slope);
        for (let y = Math.max(0, y0); y < Math.min(height, y0 + lineHeight); y++) {
          if (random() < 0.85) grey[y * width + column] = ink;
        }
      }
      x += word + between(random, 8, 30);
    }
  }
  return grey;
}

describe("measureSkew", () => {
  it("finds the angle text lines were drawn at", () => {
    const random = seeded(3);
    for (const degrees of [-3, -1.7, -0.4, 0, 0.6, 2.2, 3]) {
      const grey = textPage(random, 900, 700, degrees);
      expect(Math.abs(measureSkew(grey, 900, 700) - degrees), `${degrees}°`).toBeLessThanOrEqual(0.2);
    }
  });

  it("answers 0 for a page with too little ink to tell", () => {
    // 199 ink samples (of the 1 in 1 sampled on a 500 px page): too few, however they lie.
    const grey = new Uint8Array(500 * 400).fill(255);
    for (let index = 0; index < 199; index++) grey[(100 + index) * 500 + 2 * index] = 0;
    expect(measureSkew(grey, 500, 400)).toBe(0);
    grey[399 * 500] = 128;
    expect(measureSkew(grey, 500, 400)).not.toBe(0);
  });
});

describe("measureSkew, against the plain version", () => {
  it("returns the same angle on text drawn at known angles, of every size and sampling step", () => {
    const random = seeded(20261127);
    // Sampling steps of 1 to 4 (pages up to 1,000, 2,000, 3,000 and 4,000 px), odd widths.
    const sizes: [number, number][] = [
      [37, 29],
      [101, 257],
      [333, 211],
      [640, 480],
      [999, 1001],
      [1001, 499],
      [1203, 905],
      [2400, 1788],
      [2401, 617],
      [3001, 901],
      [700, 3333],
    ];
    let found = 0;
    for (const [width, height] of sizes) {
      for (let round = 0; round < 3; round++) {
        const degrees = Math.round((random() * 6 - 3) * 100) / 100;
        const grey = textPage(random, width, height, degrees, between(random, 0, 3));
        const expected = referenceMeasureSkew(grey, width, height);
        expect(measureSkew(grey, width, height), `${width}x${height} at ${degrees}°`).toBe(expected);
        if (Math.abs(expected - degrees) <= 0.2) found++;
      }
    }
    // Most pages had something real to find (the smallest hold too little ink).
    expect(found).toBeGreaterThan(25);
  });

  it("returns the same angle for other ranges of angles, an even or odd count of them", () => {
    const random = seeded(11);
    // 1, 2, 7, 8, 51, 61, 201 angles; a fractional range (its tenths are not whole).
    for (const maxDegrees of [0, 0.05, 0.35, 0.3517, 2.5, 3, 10]) {
      for (let round = 0; round < 4; round++) {
        const degrees = (random() * 2 - 1) * Math.min(3, maxDegrees + 0.3);
        const grey = textPage(random, 500, 380, degrees);
        const expected = referenceMeasureSkew(grey, 500, 380, maxDegrees);
        expect(Object.is(measureSkew(grey, 500, 380, maxDegrees), expected), `±${maxDegrees}°`).toBe(true);
      }
    }
  });

  it("returns the same angle where projections leave the histogram (ranges past 90°)", () => {
    // Tall narrow pages of ink specks and a ruled line, so that the histogram is not negative in
    // size: past 90° the offset is negative and near 90° the slopes are huge, so that many bins
    // fall below 0 or far past 2^31 (such samples are dropped, and truncating them would not drop
    // them all): the fast pass must give way to Math.floor.
    const random = seeded(13);
    let pages = 0;
    while (pages < 10) {
      const width = between(random, 4, 16);
      const height = between(random, 200, 400);
      const maxDegrees = [91, 95, 100, 120, 135, 150, 170, 180][between(random, 0, 7)]!;
      if (!(height + width * Math.tan((maxDegrees * Math.PI) / 180) * 2 > 0)) continue;
      const grey = new Uint8Array(width * height).fill(255);
      const density = 0.02 + random() * 0.3;
      for (let index = 0; index < grey.length; index++) if (random() < density) grey[index] = 0;
      const rule = between(random, 0, height - 1);
      grey.fill(0, rule * width, (rule + 1) * width);
      const expected = referenceMeasureSkew(grey, width, height, maxDegrees);
      expect(Object.is(measureSkew(grey, width, height, maxDegrees), expected), `±${maxDegrees}°`).toBe(true);
      pages++;
    }
    // And where the range is negative (no angle at all) or not a number.
    const grey = textPage(random, 300, 300, 2);
    for (const maxDegrees of [-3, Number.NaN]) {
      expect(
        Object.is(measureSkew(grey, 300, 300, maxDegrees), referenceMeasureSkew(grey, 300, 300, maxDegrees)),
      ).toBe(true);
    }
  });

  it("returns the same angle on random pages: specks, noise, blank, ink at the threshold, short buffers", () => {
    const random = seeded(7);
    for (let round = 0; round < 80; round++) {
      // Up to 1,100 px wide (a sampling step of 2) and a quarter ink at most: each page is 61
      // passes over its ink samples, twice.
      const width = between(random, 1, 1100);
      const height = between(random, 1, 400);
      const grey = new Uint8Array(width * height).fill(PAPER[between(random, 0, PAPER.length - 1)]!);
      const density = [0, 0.001, 0.01, 0.05, 0.25][between(random, 0, 4)]!;
      for (let ink = Math.round(grey.length * density); ink > 0; ink--) {
        grey[between(random, 0, grey.length - 1)] = INK[ink % INK.length]!;
      }
      // Sometimes a page whose buffer ends early: the rows past its end read as paper.
      const page = random() < 0.1 ? grey.subarray(0, Math.floor(grey.length * random())) : grey;
      const expected = referenceMeasureSkew(page, width, height);
      expect(measureSkew(page, width, height), `${width}x${height}, ${density} ink`).toBe(expected);
    }
  });
});
