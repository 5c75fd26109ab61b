import { describe, expect, it } from "vitest";
import { stretchContrast } from "../src/contrast.js";
import { seeded } from "./seeded.js";

/** A page of `total` pixels holding `count` pixels of each given grey level, the rest `fill`. */
function page(total: number, fill: number, levels: [level: number, count: number][]): Uint8Array {
  const grey = new Uint8Array(total).fill(fill);
  let at = 0;
  for (const [level, count] of levels) {
    grey.fill(level, at, at + count);
    at += count;
  }
  return grey;
}

describe("stretchContrast", () => {
  it("maps the lower percentile's level to black and the upper one's to white, linearly between", () => {
    // 10,000 px: 50 at 10 (0.5 %), 250 at 50 (3 % cumulative), 9,700 at 200. With 2 % / 99 %, the
    // black point is 50 (10 holds only 0.5 %) and the white point 200.
    const grey = page(10_000, 200, [
      [10, 50],
      [50, 250],
      [125, 1],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0); // 10, below the black point: clipped
    expect(grey[50]).toBe(0); // 50
    expect(grey[300]).toBe(128); // 125: (125 - 50) * 255 / 150 = 127.5
    expect(grey[9_999]).toBe(255); // 200
  });

  it("keeps a light tone that covers part of the page light, where the lower percentile falls on it", () => {
    // 10,000 px: 150 of ink at 0 (1.5 %), 2,000 of a striped table's grey band at 228, the rest
    // paper at 255. The 2 % point is 228: by percentiles alone the band, text and all, went black.
    // The black point comes down to where 228 stays 3/4 of the way to white: (228 - 0.75 * 255) /
    // 0.25 = 147, so the band becomes (228 - 147) * 255 / 108 = 191.
    const grey = page(10_000, 255, [
      [0, 150],
      [228, 2_000],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0);
    expect(grey[150]).toBe(191);
    expect(grey[9_999]).toBe(255);
    // Under 1 % of the page, a light level is not a tone: the percentile's black point stands.
    // (1.5 % at 0 and 0.4 % at 200 put the 2 % point on 228, which holds 0.9 %.)
    const sparse = page(10_000, 255, [
      [0, 150],
      [200, 40],
      [228, 90],
    ]);
    stretchContrast(sparse, 0.02, 0.99);
    expect(sparse[150]).toBe(0); // 200, below the black point 228
    expect(sparse[200]).toBe(0); // 228, the black point
  });

  it("counts every pixel, the last ones of a page whose size is not a multiple of four too", () => {
    // 103 px: 100 at 200, then 3 at 10 (2.9 %): the black point is 10 only if the last 3 count.
    const grey = new Uint8Array(103).fill(200);
    grey.fill(10, 100);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[102]).toBe(0);
    expect(grey[0]).toBe(255);
  });

  it("leaves a page alone whose percentiles are at most two levels apart", () => {
    const flat = page(1_000, 128, [[127, 500]]);
    const before = Uint8Array.from(flat);
    stretchContrast(flat, 0.02, 0.99);
    expect(flat).toEqual(before);
  });

  it("keeps a page that already spans black to white as it is", () => {
    const grey = page(1_000, 255, [
      [0, 100],
      [77, 10],
    ]);
    stretchContrast(grey, 0.02, 0.99);
    expect(grey[0]).toBe(0);
    expect(grey[105]).toBe(77);
    expect(grey[999]).toBe(255);
  });
});

/**
 * `stretchContrast` as it was before it read the page as 32-bit words and skipped tables that keep
 * every level (commit 80a32f2): one pixel at a time, the oracle the faster one must match byte for
 * byte.
 */
const referenceStretchContrast = (() => {
  const LIGHT = 128;
  const TONE = 0.01;
  const KEEP_LIGHT = 0.75;

  function stretchContrast(grey: Uint8Array, lower: number, upper: number): void {
    const histogram = levels(grey);
    let low = percentile(histogram, grey.length, lower);
    const high = percentile(histogram, grey.length, upper);
    for (let level = LIGHT; level < high; level++) {
      if (histogram[level]! >= grey.length * TONE) {
        low = Math.min(low, Math.max(0, Math.floor((level - KEEP_LIGHT * high) / (1 - KEEP_LIGHT))));
      }
    }
    if (high - low <= 2) return;
    const table = new Uint8Array(256);
    const scale = 255 / (high - low);
    for (let level = 0; level < 256; level++) {
      table[level] = Math.min(255, Math.max(0, Math.round((level - low) * scale)));
    }
    for (let index = 0; index < grey.length; index++) grey[index] = table[grey[index]!]!;
  }

  function levels(grey: Uint8Array): Uint32Array {
    const a = new Uint32Array(256);
    const b = new Uint32Array(256);
    const c = new Uint32Array(256);
    const d = new Uint32Array(256);
    const whole = grey.length - (grey.length % 4);
    let index = 0;
    for (; index < whole; index += 4) {
      a[grey[index]!]! += 1;
      b[grey[index + 1]!]! += 1;
      c[grey[index + 2]!]! += 1;
      d[grey[index + 3]!]! += 1;
    }
    for (; index < grey.length; index++) a[grey[index]!]! += 1;
    for (let level = 0; level < 256; level++) a[level]! += b[level]! + c[level]! + d[level]!;
    return a;
  }

  function percentile(histogram: Uint32Array, total: number, fraction: number): number {
    let seen = 0;
    for (let level = 0; level < 256; level++) {
      seen += histogram[level]!;
      if (seen > total * fraction) return level;
    }
    return 255;
  }

  return stretchContrast;
})();

const level = (random: () => number, from: number, to: number) =>
  from + Math.floor(random() * (to - from + 1));

/** The kinds of page the oracle test draws, each filling `grey` (its pixels only). */
const KINDS: Record<string, (grey: Uint8Array, random: () => number) => void> = {
  "one level": (grey, random) => {
    grey.fill(random() < 0.5 ? 255 : level(random, 0, 255));
  },
  "two levels": (grey, random) => {
    const [paper, ink, share] = [level(random, 0, 255), level(random, 0, 255), random()];
    for (let index = 0; index < grey.length; index++) grey[index] = random() < share ? ink : paper;
  },
  // A document: white paper (runs of 255 a few to thousands of pixels long), text in dark levels
  // and antialiased edges, sometimes a light band (a striped table's rows, a grey panel).
  document: (grey, random) => {
    grey.fill(255);
    const band = random() < 0.5 ? level(random, 128, 254) : -1;
    let index = 0;
    while (index < grey.length) {
      const run = Math.floor(random() ** 3 * 2000);
      if (band >= 0 && random() < 0.2) grey.fill(band, index, index + run);
      index += run;
      for (const end = Math.min(grey.length, index + level(random, 1, 12)); index < end; index++) {
        grey[index] = random() < 0.7 ? level(random, 0, 60) : level(random, 0, 255);
      }
    }
  },
  // A page that already spans black to white (the table keeps every level).
  "black to white": (grey, random) => {
    for (let index = 0; index < grey.length; index++) {
      const draw = random();
      grey[index] = draw < 0.05 ? 0 : draw < 0.9 ? 255 : level(random, 0, 255);
    }
  },
  // A photographed page: paper of light, noisy levels, hardly ever 255.
  photo: (grey, random) => {
    const paper = level(random, 150, 250);
    for (let index = 0; index < grey.length; index++) {
      grey[index] = random() < 0.04 ? level(random, 10, 90) : Math.min(255, paper + level(random, -6, 6));
    }
  },
  noise: (grey, random) => {
    for (let index = 0; index < grey.length; index++) grey[index] = level(random, 0, 255);
  },
  // White paper with one non-white pixel at every position of a 16-pixel block (where the word
  // passes skip whole blocks of white): none may be skipped.
  "lone pixels": (grey, random) => {
    grey.fill(255);
    for (let index = level(random, 0, 16); index < grey.length; index += level(random, 13, 19)) {
      grey[index] = level(random, 0, 254);
    }
  },
};

describe("stretchContrast, against the one-pixel-at-a-time version", () => {
  it("leaves the same bytes on random pages of every kind, size and alignment, and none outside the page", () => {
    const random = seeded(20261127);
    const sizes = [0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 257, 1023, 4099, 40_000, 65_537];
    const percentiles: [number, number][] = [
      [0.02, 0.99],
      [0, 1],
      [0.1, 0.5],
      [0.5, 0.5],
    ];
    let changed = 0;
    let kept = 0;
    for (const [kind, draw] of Object.entries(KINDS)) {
      for (const size of sizes) {
        for (let round = 0; round < 3; round++) {
          // Inside a bigger buffer at an offset of 0 to 7 bytes: the word passes start unaligned,
          // and a write outside the page would show in the bytes around it.
          const offset = level(random, 0, 7);
          const buffer = new Uint8Array(offset + size + 9);
          for (let index = 0; index < buffer.length; index++) buffer[index] = level(random, 0, 255);
          const grey = buffer.subarray(offset, offset + size);
          draw(grey, random);
          const [lower, upper] = percentiles[round % percentiles.length]!;
          const expected = Uint8Array.from(buffer);
          referenceStretchContrast(expected.subarray(offset, offset + size), lower, upper);
          const before = Uint8Array.from(buffer);
          stretchContrast(grey, lower, upper);
          // Buffer.compare: toEqual walks 65,537 bytes slowly.
          expect(
            Buffer.compare(buffer, expected),
            `${kind}, ${size} px at ${offset}, ${lower}-${upper}`,
          ).toBe(0);
          if (Buffer.compare(buffer, before) !== 0) changed++;
          else kept++;
        }
      }
    }
    // Both kinds of outcome occurred: pages stretched, and pages left alone.
    expect(changed).toBeGreaterThan(100);
    expect(kept).toBeGreaterThan(50);
  });

  it("leaves the same bytes on a document page of 2400x1788 with a grey band and on a photographed one", () => {
    const random = seeded(5);
    for (const kind of ["document", "photo"]) {
      const grey = new Uint8Array(2400 * 1788);
      KINDS[kind]!(grey, random);
      const expected = Uint8Array.from(grey);
      referenceStretchContrast(expected, 0.02, 0.99);
      stretchContrast(grey, 0.02, 0.99);
      expect(Buffer.compare(grey, expected), kind).toBe(0);
    }
  });

  it("stretches the light paper of a photographed page, white staying white", () => {
    // Paper at 200 (91 %), ink at 40 (5 %), a mid grey at 120, 32 px of white (3 %): with 2 % and
    // 90 %, 40 becomes black, 200 white and 120 halfway, (120 - 40) * 255 / 160 = 127.5; the table
    // is not the identity, and the white (skipped sixteen pixels at a time) stays white.
    const grey = new Uint8Array(1_001).fill(200);
    grey.fill(40, 0, 50);
    grey[60] = 120;
    grey.fill(255, 100, 132);
    stretchContrast(grey, 0.02, 0.9);
    expect(grey[0]).toBe(0);
    expect(grey[60]).toBe(128);
    expect(grey[99]).toBe(255);
    expect([...grey.subarray(100, 132)].every((value) => value === 255)).toBe(true);
    expect(grey[1_000]).toBe(255);
  });
});
