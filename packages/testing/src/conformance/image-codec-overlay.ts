/** The overlay group of the ImageCodec suite: placement, clipping, opacity, order and tiling. */
import type { OverlayLayer, Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { beforeAll, describe, expect } from "vitest";
import {
  Colors,
  colorDistance,
  DEFAULT_QUADRANTS,
  halvesImage,
  meanOf,
  orientedJpeg,
  pixelAt,
  type Quadrants,
  quadrantsImage,
  type RawImage,
  solidImage,
} from "../fixtures/images.js";
import { type CodecHarness, EXACT, LOSSY } from "./image-codec-harness.js";

// The group's fixtures, built before its first test; the same bytes for every codec.
let base: Uint8Array;
let red: Uint8Array;
let tile: Uint8Array;

const layer = (input: Uint8Array, fields: Partial<Omit<OverlayLayer, "input">> = {}): OverlayLayer => ({
  input,
  left: 0,
  top: 0,
  width: 10,
  height: 10,
  repeat: "no-repeat",
  opacity: 1,
  ...fields,
});
const overlay = (...layers: OverlayLayer[]): TransformStep[] => [{ type: "overlay", layers }];
/** Colour of the quadrants tile (size x size) at a base pixel, for tiles starting at left/top. */
const tiledColor = (
  x: number,
  y: number,
  left: number,
  top: number,
  size = 10,
  colors = DEFAULT_QUADRANTS,
) => {
  const u = (((x - left) % size) + size) % size;
  const v = (((y - top) % size) + size) % size;
  return quadrantColor(colors, u < size / 2, v < size / 2);
};

export function describeOverlay(h: CodecHarness): void {
  describe("overlay", () => {
    beforeAll(async () => {
      base = await solidImage(100, 100, Colors.white, "png");
      red = await solidImage(10, 10, Colors.red, "png");
      tile = await quadrantsImage(10, 10);
    });
    overlayPlacement(h);
    overlayClippingOpacityAndOrder(h);
    overlayRepeat(h);
    overlayRepeatAxesAndJpeg(h);
  });
}

function overlayPlacement(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "overlay",
    "draws at left/top with the requested width and height",
    async () => {
      const { image } = await run(base, overlay(layer(red, { left: 20, top: 30, width: 15, height: 10 })));
      expect([image.width, image.height]).toEqual([100, 100]);
      expectColor(image, 20, 30, Colors.red);
      expectColor(image, 34, 39, Colors.red);
      expectColor(image, 35, 30, Colors.white);
      expectColor(image, 19, 30, Colors.white);
      expectColor(image, 20, 40, Colors.white);
      expectColor(image, 20, 29, Colors.white);
    },
    ["overlay"],
  );

  check(
    "overlay",
    "stretches the overlay to width x height",
    async () => {
      const { image } = await run(base, overlay(layer(tile, { width: 40, height: 20 })));
      expectColor(image, 2, 2, DEFAULT_QUADRANTS.topLeft);
      expectColor(image, 37, 2, DEFAULT_QUADRANTS.topRight);
      expectColor(image, 2, 17, DEFAULT_QUADRANTS.bottomLeft);
      expectColor(image, 37, 17, DEFAULT_QUADRANTS.bottomRight);
      expectColor(image, 41, 5, Colors.white);
    },
    ["overlay"],
  );

  check(
    "overlay",
    "clips negative and overflowing offsets instead of failing",
    async () => {
      const { image } = await run(
        base,
        overlay(layer(tile, { left: -5, top: -5 }), layer(red, { left: 95, top: 96, width: 10, height: 10 })),
      );
      // Only the bottom-right quadrant of the tile is inside.
      expectColor(image, 0, 0, DEFAULT_QUADRANTS.bottomRight);
      expectColor(image, 4, 4, DEFAULT_QUADRANTS.bottomRight);
      expectColor(image, 5, 5, Colors.white);
      expectColor(image, 99, 99, Colors.red);
      expectColor(image, 95, 96, Colors.red);
      expectColor(image, 94, 96, Colors.white);
      expectColor(image, 95, 95, Colors.white);
    },
    ["overlay"],
  );
}

function overlayClippingOpacityAndOrder(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "overlay",
    "an overlay larger than the base is clipped; one fully outside changes nothing",
    async () => {
      const covered = await run(base, overlay(layer(red, { left: -50, top: -50, width: 300, height: 300 })));
      expect(colorDistance(meanOf(covered.image), Colors.red)).toBeLessThanOrEqual(EXACT);
      const outside = await run(
        base,
        overlay(
          layer(red, { left: 200, top: 0 }),
          layer(red, { left: -10, top: -10 }),
          layer(red, { top: 100 }),
        ),
      );
      expect(colorDistance(meanOf(outside.image), Colors.white)).toBeLessThanOrEqual(1);
    },
    ["overlay"],
  );

  check(
    "overlay",
    "applies opacity and the overlay's own transparency",
    async () => {
      const half = await run(base, overlay(layer(red, { opacity: 0.5 })));
      expectColor(half.image, 5, 5, { r: 255, g: 128, b: 128, alpha: 1 }, 12);
      const holes = await halvesImage(10, 10, Colors.transparent, Colors.red, "png");
      const { image } = await run(base, overlay(layer(holes)));
      expectColor(image, 2, 5, Colors.white);
      expectColor(image, 7, 5, Colors.red);
    },
    ["overlay"],
  );

  check(
    "overlay",
    "draws layers in array order",
    async () => {
      const blue = await solidImage(10, 10, Colors.blue, "png");
      const { image } = await run(
        base,
        overlay(
          layer(red, { width: 20, height: 20 }),
          layer(blue, { left: 10, top: 10, width: 20, height: 20 }),
        ),
      );
      expectColor(image, 5, 5, Colors.red);
      expectColor(image, 15, 15, Colors.blue);
      expectColor(image, 25, 25, Colors.blue);
    },
    ["overlay"],
  );
}

function overlayRepeat(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "overlay",
    "repeat tiles the whole image, aligned so a tile starts at left/top",
    async () => {
      for (const [left, top] of [
        [3, 4],
        [-13, -27],
        [0, 0],
      ] as const) {
        const { image } = await run(base, overlay(layer(tile, { left, top, repeat: "repeat" })));
        for (let y = 0; y < 100; y += 7) {
          for (let x = 0; x < 100; x += 3) {
            expectColor(image, x, y, tiledColor(x, y, left, top));
          }
        }
        expect(countColor(image, Colors.white), "white pixels left").toBe(0);
      }
    },
    ["overlay"],
  );

  check(
    "overlay",
    "repeat works with a tile larger than the base",
    async () => {
      // The 10 px tile is stretched to 150 px, so samples sit mid-quadrant, away from resampled edges.
      const { image } = await run(base, overlay(layer(tile, { left: 20, top: 20, width: 150, height: 150 })));
      expectColor(image, 57, 57, DEFAULT_QUADRANTS.topLeft);
      expectColor(image, 5, 5, Colors.white);
      const repeated = await run(
        base,
        overlay(layer(tile, { left: 20, top: 20, width: 150, height: 150, repeat: "repeat" })),
      );
      expectColor(repeated.image, 57, 57, DEFAULT_QUADRANTS.topLeft);
      expectColor(repeated.image, 5, 5, DEFAULT_QUADRANTS.bottomRight);
      expectColor(repeated.image, 57, 5, DEFAULT_QUADRANTS.bottomLeft);
      expectColor(repeated.image, 5, 57, DEFAULT_QUADRANTS.topRight);
      // Tiled along one axis only: the window of the tiling on x, the visible span on y.
      const strip = await run(
        base,
        overlay(layer(tile, { left: 20, top: 20, width: 150, height: 150, repeat: "repeat-x" })),
      );
      expectColor(strip.image, 57, 57, DEFAULT_QUADRANTS.topLeft);
      expectColor(strip.image, 5, 57, DEFAULT_QUADRANTS.topRight);
      expectColor(strip.image, 57, 5, Colors.white);
    },
    ["overlay"],
  );
}

function overlayRepeatAxesAndJpeg(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "overlay",
    "repeat-x tiles horizontally only; repeat-y vertically only",
    async () => {
      const horizontal = await run(base, overlay(layer(tile, { left: 3, top: 40, repeat: "repeat-x" })));
      for (let x = 0; x < 100; x += 1) {
        expectColor(horizontal.image, x, 42, tiledColor(x, 42, 3, 40));
        expectColor(horizontal.image, x, 47, tiledColor(x, 47, 3, 40));
        expectColor(horizontal.image, x, 39, Colors.white);
        expectColor(horizontal.image, x, 50, Colors.white);
      }
      const vertical = await run(base, overlay(layer(tile, { left: 40, top: -3, repeat: "repeat-y" })));
      for (let y = 0; y < 100; y += 1) {
        expectColor(vertical.image, 41, y, tiledColor(41, y, 40, -3));
        expectColor(vertical.image, 48, y, tiledColor(48, y, 40, -3));
        expectColor(vertical.image, 39, y, Colors.white);
        expectColor(vertical.image, 50, y, Colors.white);
      }
    },
    ["overlay"],
  );

  check(
    "overlay",
    "draws on a jpeg base and keeps jpeg output; EXIF-oriented overlays are upright",
    async () => {
      const jpegBase = await solidImage(60, 60, Colors.white, "jpeg");
      const upright = await orientedJpeg(40, 20);
      const { image } = await run(
        jpegBase,
        overlay(layer(red, { left: 40, top: 40 }), layer(upright, { width: 20, height: 40 })),
      );
      expectColor(image, 45, 45, Colors.red, LOSSY);
      expectColor(image, 10, 5, Colors.red, LOSSY);
      expectColor(image, 10, 34, Colors.blue, LOSSY);
      expectColor(image, 30, 20, Colors.white, LOSSY);
    },
    ["overlay"],
  );
}

function quadrantColor(colors: Quadrants, left: boolean, top: boolean): Rgba {
  if (top) return left ? colors.topLeft : colors.topRight;
  return left ? colors.bottomLeft : colors.bottomRight;
}

function countColor(image: RawImage, color: Rgba, tolerance = EXACT): number {
  let count = 0;
  for (let y = 0; y < image.height; y += 1) {
    for (let x = 0; x < image.width; x += 1) {
      if (colorDistance(pixelAt(image, x, y), color) <= tolerance) count += 1;
    }
  }
  return count;
}
