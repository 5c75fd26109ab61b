import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createSharpBackgroundRemover } from "../src/index.js";

const WIDTH = 320;
const HEIGHT = 240;

type Rgb = [number, number, number];

/** A generated product shot: background colour per pixel, a subject with a known mask. */
interface Fixture {
  name: string;
  background: (x: number, y: number) => Rgb;
  inside: (x: number, y: number) => boolean;
  subject: (x: number, y: number) => Rgb;
}

const ellipse = (cx: number, cy: number, rx: number, ry: number) => (x: number, y: number) =>
  ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;
const box = (x0: number, y0: number, x1: number, y1: number) => (x: number, y: number) =>
  x >= x0 && x < x1 && y >= y0 && y < y1;
// Deterministic pseudo-random texture (no Math.random: failures must reproduce).
const noise = (x: number, y: number) => ((Math.sin(x * 12.9898 + y * 78.233) * 43758.5453) % 1) * 8;

const fixtures: Fixture[] = [
  {
    name: "red bottle on white",
    background: () => [255, 255, 255],
    inside: ellipse(160, 120, 60, 90),
    subject: (_x, y) => [200, 30 + (y % 20), 40],
  },
  {
    name: "multicolour box on grey",
    background: () => [200, 200, 200],
    inside: box(90, 60, 230, 190),
    subject: (x) => (x < 160 ? [20, 60, 160] : [240, 180, 20]),
  },
  {
    name: "dark mug on a vertical gradient",
    background: (_x, y) => [180 + (y / HEIGHT) * 70, 200 + (y / HEIGHT) * 50, 255],
    inside: (x, y) => ellipse(150, 130, 70, 70)(x, y) || box(210, 110, 250, 150)(x, y),
    subject: () => [40, 40, 50],
  },
  {
    name: "green can on a horizontal gradient",
    background: (x) => [240 - (x / WIDTH) * 90, 240 - (x / WIDTH) * 90, 240 - (x / WIDTH) * 90],
    inside: box(120, 40, 200, 220),
    subject: (_x, y) => [30, 150 + (y % 30), 60],
  },
  {
    name: "orange ball on a radial vignette",
    background: (x, y) => {
      const d = Math.hypot(x - WIDTH / 2, y - HEIGHT / 2) / 200;
      return [250 - 90 * d, 245 - 90 * d, 235 - 90 * d];
    },
    inside: ellipse(170, 115, 65, 65),
    subject: () => [240, 110, 20],
  },
  {
    name: "blue shoe on a lightly textured backdrop",
    background: (x, y) => {
      const n = noise(x, y);
      return [225 + n, 220 + n, 210 + n];
    },
    inside: (x, y) => ellipse(160, 150, 110, 45)(x, y) || box(60, 90, 120, 150)(x, y),
    subject: () => [30, 70, 170],
  },
];

async function render(fixture: Fixture): Promise<Uint8Array> {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
  for (let y = 0; y < HEIGHT; y += 1) {
    for (let x = 0; x < WIDTH; x += 1) {
      const colour = fixture.inside(x, y) ? fixture.subject(x, y) : fixture.background(x, y);
      raw.set(
        colour.map((value) => Math.max(0, Math.min(255, Math.round(value)))),
        (y * WIDTH + x) * 3,
      );
    }
  }
  return sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
}

async function alphaOf(png: Uint8Array) {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const meta = await sharp(png).metadata();
  const alpha = (x: number, y: number) => data[(y * info.width + x) * info.channels + 3]!;
  return { alpha, info, meta };
}

describe("createSharpBackgroundRemover", () => {
  const remover = createSharpBackgroundRemover();

  for (const fixture of fixtures) {
    it(`cuts out the subject: ${fixture.name}`, async () => {
      const image = await render(fixture);
      const png = await remover.remove({ image, width: WIDTH, height: HEIGHT });
      const { alpha, info, meta } = await alphaOf(png);
      expect(meta.format).toBe("png");
      expect(meta.hasAlpha).toBe(true);
      expect([info.width, info.height]).toEqual([WIDTH, HEIGHT]);
      // Corners and the border band are transparent.
      for (const [x, y] of [
        [2, 2],
        [WIDTH - 3, 2],
        [2, HEIGHT - 3],
        [WIDTH - 3, HEIGHT - 3],
        [WIDTH / 2, 3],
      ] as const) {
        expect(alpha(x, y), `alpha at ${x},${y}`).toBeLessThanOrEqual(5);
      }
      // IoU of the thresholded alpha with the known mask.
      let intersection = 0;
      let union = 0;
      for (let y = 0; y < HEIGHT; y += 1) {
        for (let x = 0; x < WIDTH; x += 1) {
          const truth = fixture.inside(x, y);
          const predicted = alpha(x, y) >= 128;
          if (truth && predicted) intersection += 1;
          if (truth || predicted) union += 1;
        }
      }
      expect(intersection / union).toBeGreaterThanOrEqual(0.9);
    });
  }

  it("keeps the subject's centre opaque and the output the input's size", async () => {
    const fixture = fixtures[0]!;
    const png = await remover.remove({ image: await render(fixture), width: WIDTH, height: HEIGHT });
    const { alpha } = await alphaOf(png);
    expect(alpha(160, 120)).toBeGreaterThanOrEqual(250);
    expect(alpha(160, 60)).toBeGreaterThanOrEqual(250);
  });

  it("answers (without hanging) on a busy background, keeping the size", async () => {
    // Busy backgrounds are the documented failure case: only size, format and termination are checked.
    const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
    for (let index = 0; index < raw.length; index += 1) raw[index] = (index * 7919) % 251;
    const image = await sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
      .png()
      .toBuffer();
    const png = await remover.remove({ image, width: WIDTH, height: HEIGHT });
    const { info, meta } = await alphaOf(png);
    expect(meta.format).toBe("png");
    expect([info.width, info.height]).toEqual([WIDTH, HEIGHT]);
  });

  it("refuses bytes whose size is not the recorded one", async () => {
    const image = await render(fixtures[1]!);
    await expect(remover.remove({ image, width: WIDTH + 1, height: HEIGHT })).rejects.toThrow(/expected/);
  });
});
