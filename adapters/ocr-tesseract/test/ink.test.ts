import { describe, expect, it } from "vitest";
import { inkBounds, unreadInk } from "../src/ink.js";

/** A white page with the given dark rectangles. */
function page(width: number, height: number, marks: { x: number; y: number; w: number; h: number }[]) {
  const grey = new Uint8Array(width * height).fill(255);
  for (const { x, y, w, h } of marks) {
    for (let row = y; row < y + h; row++) grey.fill(20, row * width + x, row * width + x + w);
  }
  return grey;
}

describe("inkBounds", () => {
  it("is the box around every dark pixel, grown by the margin", () => {
    const grey = page(300, 200, [
      { x: 100, y: 50, w: 10, h: 5 },
      { x: 40, y: 120, w: 3, h: 3 },
      { x: 250, y: 90, w: 1, h: 1 },
    ]);
    expect(inkBounds(grey, 300, 200, 0)).toEqual({ left: 40, top: 50, width: 211, height: 73 });
    expect(inkBounds(grey, 300, 200, 10)).toEqual({ left: 30, top: 40, width: 231, height: 93 });
  });

  it("clips the margin to the page and finds ink on its edges", () => {
    const grey = page(64, 48, [
      { x: 0, y: 20, w: 2, h: 2 },
      { x: 63, y: 47, w: 1, h: 1 },
    ]);
    expect(inkBounds(grey, 64, 48, 0)).toEqual({ left: 0, top: 20, width: 64, height: 28 });
    expect(inkBounds(grey, 64, 48, 30)).toEqual({ left: 0, top: 0, width: 64, height: 48 });
  });

  it("counts only pixels darker than the threshold, and answers nothing for a page without ink", () => {
    const grey = page(50, 50, []);
    grey[25 * 50 + 25] = 128;
    expect(inkBounds(grey, 50, 50, 4)).toBeUndefined();
    grey[10 * 50 + 12] = 127;
    expect(inkBounds(grey, 50, 50, 2)).toEqual({ left: 10, top: 8, width: 5, height: 5 });
    expect(inkBounds(grey, 50, 50, 0, 129)).toEqual({ left: 12, top: 10, width: 14, height: 16 });
  });

  it("matches a full scan on random sparse pages", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 20; round++) {
      const width = 20 + Math.floor(random() * 200);
      const height = 20 + Math.floor(random() * 200);
      const grey = new Uint8Array(width * height).fill(255);
      const dots = 1 + Math.floor(random() * 6);
      for (let dot = 0; dot < dots; dot++) grey[Math.floor(random() * width * height)] = 0;
      let [x0, y0, x1, y1] = [width, height, -1, -1];
      grey.forEach((value, index) => {
        if (value >= 128) return;
        const [x, y] = [index % width, Math.floor(index / width)];
        [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)];
      });
      expect(inkBounds(grey, width, height, 0)).toEqual({
        left: x0,
        top: y0,
        width: x1 - x0 + 1,
        height: y1 - y0 + 1,
      });
    }
  });
});

describe("unreadInk", () => {
  const options = { cell: 8, minHeight: 20, maxHeight: 100, join: 60, limit: 6 };
  const whole = { left: 0, top: 0, width: 400, height: 300 };
  const read = [{ x0: 20, y0: 22, x1: 119, y1: 47 }];

  it("finds text-sized ink outside the read words, in cells, grown by a cell", () => {
    const grey = page(400, 300, [
      { x: 20, y: 22, w: 100, h: 26 }, // a word that was read
      { x: 300, y: 22, w: 20, h: 28 }, // a number that was not
    ]);
    // The number's cells: columns 37-39 (296-319), rows 2-6 (16-55); grown by 8 px.
    expect(unreadInk({ grey, width: 400, height: 300 }, whole, read, options)).toEqual([
      { left: 288, top: 8, width: 40, height: 56 },
    ]);
    // Read, it is not ink to read again; nor is ink within 2 px of a read box (its anti-aliasing).
    const edge = page(400, 300, [{ x: 20, y: 22, w: 102, h: 27 }]);
    expect(unreadInk({ grey: edge, width: 400, height: 300 }, whole, read, options)).toEqual([]);
  });

  it("leaves specks and pictures, joins a column of numbers into one region, and stops at the limit", () => {
    const grey = page(400, 300, [
      { x: 200, y: 200, w: 3, h: 3 }, // a speck: one cell high
      { x: 330, y: 120, w: 60, h: 150 }, // a picture: taller than maxHeight
      { x: 300, y: 22, w: 20, h: 28 },
      { x: 300, y: 100, w: 20, h: 28 }, // 40 px below the first: read with it
    ]);
    expect(unreadInk({ grey, width: 400, height: 300 }, whole, [], options)).toEqual([
      { left: 288, top: 8, width: 40, height: 128 },
    ]);
    const many = page(
      400,
      300,
      Array.from({ length: 8 }, (_, index) => ({
        x: 10 + (index % 4) * 100,
        y: 20 + Math.floor(index / 4) * 150,
        w: 12,
        h: 24,
      })),
    );
    const found = unreadInk({ grey: many, width: 400, height: 300 }, whole, [], options);
    expect(found).toHaveLength(6);
    // In reading order: the first row's four, then the second row's first two.
    expect(found.map((region) => region.top)).toEqual([8, 8, 8, 8, 160, 160]);
  });

  it("finds nothing on a page of more than 256 unread pieces (a picture's texture)", () => {
    const width = 1200;
    const height = 1200;
    const spots = (count: number) =>
      Array.from({ length: count }, (_, index) => ({
        x: 8 + (index % 30) * 40,
        y: 8 + Math.floor(index / 30) * 40,
        w: 10,
        h: 24,
      }));
    const area = { left: 0, top: 0, width, height };
    const few = unreadInk({ grey: page(width, height, spots(256)), width, height }, area, [], options);
    expect(few.length).toBeGreaterThan(0);
    expect(unreadInk({ grey: page(width, height, spots(257)), width, height }, area, [], options)).toEqual(
      [],
    );
  });

  it("looks only inside the area it is given", () => {
    const grey = page(400, 300, [{ x: 300, y: 22, w: 20, h: 28 }]);
    const area = { left: 0, top: 0, width: 250, height: 300 };
    expect(unreadInk({ grey, width: 400, height: 300 }, area, [], options)).toEqual([]);
  });
});
