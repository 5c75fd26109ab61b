import { describe, expect, it } from "vitest";
import { findRules } from "../src/rules.js";

/** A white page with a ruled grid, text-like specks and single light pixels inside the rules. */
function page(width: number, height: number, seed: number): Uint8Array {
  const grey = new Uint8Array(width * height).fill(250);
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const dark = (x: number, y: number) => {
    if (x >= 0 && y >= 0 && x < width && y < height) grey[y * width + x] = 20;
  };
  const top = 10 + Math.floor(random() * 20);
  const left = 10 + Math.floor(random() * 20);
  const rows = [top, top + 40, top + 80, top + 130];
  const columns = [left, left + 70, left + 150, left + 210];
  for (const y of rows)
    for (let x = columns[0]!; x <= columns.at(-1)!; x += 1) {
      dark(x, y);
      if (y === top) dark(x, y + 1); // a 2 px thick top rule
    }
  for (const x of columns) for (let y = rows[0]!; y <= rows.at(-1)!; y += 1) dark(x, y);
  // Specks (text strokes, too short to be rules) and breaks: one light pixel in a rule is bridged,
  // two end it.
  for (let speck = 0; speck < 400; speck += 1) {
    const x = Math.floor(random() * width);
    const y = Math.floor(random() * height);
    for (let step = 0; step < 6; step += 1) dark(x + (speck % 2 ? step : 0), y + (speck % 2 ? 0 : step));
  }
  grey[(top + 40) * width + left + 30] = 250;
  grey[(top + 60) * width + columns[2]!] = 250;
  grey[(top + 60) * width + columns[1]!] = 250;
  grey[(top + 61) * width + columns[1]!] = 250;
  return grey;
}

function transpose(grey: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(grey.length);
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) out[x * height + y] = grey[y * width + x]!;
  return out;
}

describe("findRules", () => {
  it("finds a grid's rules, thickness and bridged one-pixel breaks included", () => {
    const width = 300;
    const height = 200;
    const rules = findRules(page(width, height, 1), width, height, { minLength: 30 });
    expect(rules.horizontal).toHaveLength(4);
    expect(rules.horizontal[0]!.thickness).toBe(2);
    // A column broken by two light pixels is two rules; one light pixel is bridged.
    expect(rules.vertical).toHaveLength(5);
  });

  it("reads columns exactly as it reads the rows of the transposed page", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const width = 300;
      const height = 200;
      const grey = page(width, height, seed);
      const rules = findRules(grey, width, height, { minLength: 30 });
      const turned = findRules(transpose(grey, width, height), height, width, { minLength: 30 });
      expect(rules.vertical).toEqual(turned.horizontal);
      expect(rules.horizontal).toEqual(turned.vertical);
    }
  });
});

describe("findRules: strokes of large print are not rules", () => {
  const width = 200;
  const height = 200;
  /** A white page with the given dark rectangles (x, y, w, h). */
  const draw = (...boxes: [number, number, number, number][]) => {
    const grey = new Uint8Array(width * height).fill(250);
    for (const [x, y, w, h] of boxes)
      for (let row = y; row < y + h; row += 1) grey.fill(20, row * width + x, row * width + x + w);
    return grey;
  };
  const vertical = (grey: Uint8Array, options = {}) =>
    findRules(grey, width, height, options).vertical.map(({ at, thickness }) => ({ at, thickness }));

  it("takes a line at least 12 times as long as thick, not a letter's stem", () => {
    // 3 x 60 px: a rule; 6 x 60 px: the stem of an `l` in 80 px print.
    expect(vertical(draw([40, 20, 3, 60]))).toEqual([{ at: 41, thickness: 3 }]);
    expect(vertical(draw([40, 20, 6, 60]))).toEqual([]);
  });

  it("takes a line with paper along it, not the edge of a stroke that goes on beside it", () => {
    const line: [number, number, number, number] = [40, 20, 1, 100];
    expect(vertical(draw(line))).toEqual([{ at: 40, thickness: 1 }]);
    // Ink from 2 px to the right on 3 rows of 4: the rest of a glyph beside the edge of its stroke
    // (the pixel between stays light, as anti-aliasing leaves it, so the two are not one run).
    const rows = (keep: (row: number) => boolean) =>
      Array.from({ length: 100 }, (_, row) => row)
        .filter(keep)
        .map((row): [number, number, number, number] => [42, 20 + row, 3, 1]);
    expect(vertical(draw(line, ...rows((row) => row % 4 !== 0)))).toEqual([]);
    // On 1 row of 4 (text or a crossing rule meeting it here and there), it stays a rule.
    expect(vertical(draw(line, ...rows((row) => row % 4 === 0)))).toEqual([{ at: 40, thickness: 1 }]);
  });

  it("takes both lines of a double border, a gap of paper apart", () => {
    expect(vertical(draw([40, 20, 1, 100], [44, 16, 1, 108]))).toEqual([
      { at: 40, thickness: 1 },
      { at: 44, thickness: 1 },
    ]);
  });

  it("with the page's line height, takes only lines at least 4 text lines long", () => {
    const grey = draw([40, 20, 1, 100]);
    expect(vertical(grey, { lineHeight: 25 })).toEqual([{ at: 40, thickness: 1 }]);
    expect(vertical(grey, { lineHeight: 26 })).toEqual([]);
  });
});
