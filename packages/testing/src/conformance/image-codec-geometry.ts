/** The geometry group of the ImageCodec suite: mirror, crop, rotate, resize and steps in sequence. */
import type { Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { rotatedSize } from "@pixport/core/adapter-kit";
import { describe, expect } from "vitest";
import {
  Colors,
  colorDistance,
  DEFAULT_QUADRANTS,
  halvesImage,
  meanOf,
  orientedJpeg,
  pixelAt,
  quadrantsImage,
  solidImage,
  topBottomImage,
} from "../fixtures/images.js";
import { type CodecHarness, EXACT, LOSSY } from "./image-codec-harness.js";

const quadrants = () => quadrantsImage(60, 40);
const rotate = (angle: number, background: Rgba = Colors.black): TransformStep => ({
  type: "rotate",
  angle,
  background,
});

const resize = (
  width: number,
  height: number,
  fit: "fill" | "contain" | "cover",
  position: (TransformStep & { type: "resize" })["position"] = "center",
  background: Rgba = Colors.green,
): TransformStep => ({ type: "resize", width, height, fit, position, background });

export function describeMirror(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  describe("mirror", () => {
    check(
      "mirror",
      "horizontal swaps left and right",
      async () => {
        const { image } = await run(await halvesImage(40, 20), [{ type: "mirror", mode: "horizontal" }]);
        expect([image.width, image.height]).toEqual([40, 20]);
        expectColor(image, 5, 10, Colors.blue);
        expectColor(image, 34, 10, Colors.red);
      },
      ["mirror"],
    );

    check(
      "mirror",
      "vertical swaps top and bottom",
      async () => {
        const input = await topBottomImage(20, 40, Colors.red, Colors.blue);
        const { image } = await run(input, [{ type: "mirror", mode: "vertical" }]);
        expectColor(image, 10, 5, Colors.blue);
        expectColor(image, 10, 34, Colors.red);
      },
      ["mirror"],
    );

    check(
      "mirror",
      "both equals a 180° turn",
      async () => {
        const { image } = await run(await quadrantsImage(40, 40), [{ type: "mirror", mode: "both" }]);
        expectColor(image, 10, 10, DEFAULT_QUADRANTS.bottomRight);
        expectColor(image, 30, 10, DEFAULT_QUADRANTS.bottomLeft);
        expectColor(image, 10, 30, DEFAULT_QUADRANTS.topRight);
        expectColor(image, 30, 30, DEFAULT_QUADRANTS.topLeft);
      },
      ["mirror"],
    );
  });
}

export function describeCrop(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  describe("crop", () => {
    check(
      "crop",
      "0,0,100,100 of a 200x200 image is its top-left quadrant",
      async () => {
        const input = await quadrantsImage(200, 200);
        const { image } = await run(input, [{ type: "crop", left: 0, top: 0, width: 100, height: 100 }]);
        expect([image.width, image.height]).toEqual([100, 100]);
        for (const [x, y] of [
          [0, 0],
          [99, 0],
          [0, 99],
          [99, 99],
          [50, 50],
        ] as const) {
          expectColor(image, x, y, DEFAULT_QUADRANTS.topLeft);
        }
      },
      ["crop"],
    );

    check(
      "crop",
      "extracts an off-origin region ([left, left+width) x [top, top+height))",
      async () => {
        const input = await quadrantsImage(200, 200);
        const { image } = await run(input, [{ type: "crop", left: 60, top: 70, width: 80, height: 60 }]);
        expect([image.width, image.height]).toEqual([80, 60]);
        expectColor(image, 0, 0, DEFAULT_QUADRANTS.topLeft);
        expectColor(image, 39, 29, DEFAULT_QUADRANTS.topLeft);
        expectColor(image, 40, 29, DEFAULT_QUADRANTS.topRight);
        expectColor(image, 39, 30, DEFAULT_QUADRANTS.bottomLeft);
        expectColor(image, 79, 59, DEFAULT_QUADRANTS.bottomRight);
      },
      ["crop"],
    );

    check(
      "crop",
      "uses coordinates of the upright (EXIF-oriented) image",
      async () => {
        const input = await orientedJpeg(40, 20);
        const top = await run(input, [{ type: "crop", left: 0, top: 0, width: 20, height: 16 }]);
        expect([top.image.width, top.image.height]).toEqual([20, 16]);
        expectColor(top.image, 10, 8, Colors.red, LOSSY);
        const bottom = await run(input, [{ type: "crop", left: 0, top: 24, width: 20, height: 16 }]);
        expectColor(bottom.image, 10, 8, Colors.blue, LOSSY);
      },
      ["crop"],
    );
  });
}

export function describeRotate(h: CodecHarness): void {
  describe("rotate", () => {
    rotateTurnsAndCanvas(h);
    rotateAnyAngle(h);
  });
}

function rotateTurnsAndCanvas(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "rotate",
    "90 swaps width and height and turns clockwise",
    async () => {
      const { image } = await run(await quadrants(), [rotate(90)]);
      expect([image.width, image.height]).toEqual([40, 60]);
      // Clockwise: top-left → top-right → bottom-right → bottom-left → top-left.
      expectColor(image, 30, 10, DEFAULT_QUADRANTS.topLeft);
      expectColor(image, 30, 50, DEFAULT_QUADRANTS.topRight);
      expectColor(image, 10, 50, DEFAULT_QUADRANTS.bottomRight);
      expectColor(image, 10, 10, DEFAULT_QUADRANTS.bottomLeft);
    },
    ["rotate"],
  );

  check(
    "rotate",
    "180 and 270 turn clockwise too",
    async () => {
      const half = await run(await quadrants(), [rotate(180)]);
      expect([half.image.width, half.image.height]).toEqual([60, 40]);
      expectColor(half.image, 50, 30, DEFAULT_QUADRANTS.topLeft);
      const threeQuarters = await run(await quadrants(), [rotate(270)]);
      expect([threeQuarters.image.width, threeQuarters.image.height]).toEqual([40, 60]);
      expectColor(threeQuarters.image, 10, 50, DEFAULT_QUADRANTS.topLeft);
      expectColor(threeQuarters.image, 10, 10, DEFAULT_QUADRANTS.topRight);
    },
    ["rotate"],
  );

  check(
    "rotate",
    "45 grows the canvas to the bounding box with transparent corners on png",
    async () => {
      const input = await solidImage(40, 20, Colors.red, "png");
      const { image } = await run(input, [rotate(45, Colors.transparent)]);
      expect({ width: image.width, height: image.height }).toEqual(
        rotatedSize({ width: 40, height: 20 }, 45),
      );
      for (const [x, y] of [
        [0, 0],
        [image.width - 1, 0],
        [0, image.height - 1],
        [image.width - 1, image.height - 1],
      ] as const) {
        expect(pixelAt(image, x, y).a, `alpha at corner (${x}, ${y})`).toBeLessThanOrEqual(5);
      }
      expectColor(image, Math.floor(image.width / 2), Math.floor(image.height / 2), Colors.red);
    },
    ["rotate"],
  );
}

function rotateAnyAngle(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "rotate",
    "30 on jpeg fills the corners with an opaque background",
    async () => {
      const input = await solidImage(40, 20, Colors.red, "jpeg");
      const { image } = await run(input, [rotate(30, Colors.green)]);
      expect({ width: image.width, height: image.height }).toEqual(
        rotatedSize({ width: 40, height: 20 }, 30),
      );
      expectColor(image, 0, 0, Colors.green, LOSSY);
      expectColor(image, image.width - 1, image.height - 1, Colors.green, LOSSY);
      expectColor(image, Math.floor(image.width / 2), Math.floor(image.height / 2), Colors.red, LOSSY);
    },
    ["rotate"],
  );

  check(
    "rotate",
    "any angle produces exactly the core's rotatedSize",
    async () => {
      const input = await solidImage(41, 23, Colors.grey, "png");
      for (const angle of [0.5, 1, 10, 30, 45, 89.9, 135, 200, 333.5]) {
        const { encoded } = await run(input, [rotate(angle)]);
        expect({ width: encoded.width, height: encoded.height }, `angle ${angle}`).toEqual(
          rotatedSize({ width: 41, height: 23 }, angle),
        );
      }
    },
    ["rotate"],
  );
}

export function describeResize(h: CodecHarness): void {
  describe("resize", () => {
    resizeFillAndContain(h);
    resizeTransparencyCoverAndDownscale(h);
  });
}

function resizeFillAndContain(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "resize",
    "fill stretches to exactly width x height",
    async () => {
      const { image } = await run(await halvesImage(40, 20), [resize(30, 50, "fill")]);
      expect([image.width, image.height]).toEqual([30, 50]);
      expectColor(image, 3, 25, Colors.red);
      expectColor(image, 26, 25, Colors.blue);
      expectColor(image, 3, 0, Colors.red);
      expectColor(image, 26, 49, Colors.blue);
    },
    ["resize"],
  );

  check(
    "resize",
    "upscales",
    async () => {
      const { image } = await run(await halvesImage(10, 10), [resize(30, 30, "fill")]);
      expect([image.width, image.height]).toEqual([30, 30]);
      expectColor(image, 2, 15, Colors.red);
      expectColor(image, 27, 15, Colors.blue);
    },
    ["resize"],
  );

  check(
    "resize",
    "contain letterboxes with the background, centred by default",
    async () => {
      const { image } = await run(await halvesImage(40, 20), [resize(40, 40, "contain")]);
      expect([image.width, image.height]).toEqual([40, 40]);
      expectColor(image, 20, 3, Colors.green);
      expectColor(image, 20, 36, Colors.green);
      expectColor(image, 5, 20, Colors.red);
      expectColor(image, 34, 20, Colors.blue);
    },
    ["resize"],
  );

  check(
    "resize",
    "contain honours position (top, left, right)",
    async () => {
      const top = await run(await halvesImage(40, 20), [resize(40, 40, "contain", "top")]);
      expectColor(top.image, 5, 5, Colors.red);
      expectColor(top.image, 20, 34, Colors.green);

      const tall = await topBottomImage(20, 40, Colors.red, Colors.blue);
      const left = await run(tall, [resize(40, 40, "contain", "left")]);
      expectColor(left.image, 10, 5, Colors.red);
      expectColor(left.image, 10, 34, Colors.blue);
      expectColor(left.image, 30, 20, Colors.green);

      const right = await run(tall, [resize(40, 40, "contain", "right")]);
      expectColor(right.image, 10, 20, Colors.green);
      expectColor(right.image, 30, 5, Colors.red);
    },
    ["resize"],
  );
}

function resizeTransparencyCoverAndDownscale(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "resize",
    "contain with a transparent background leaves a transparent band on png",
    async () => {
      const { image } = await run(await halvesImage(40, 20), [
        resize(40, 40, "contain", "center", Colors.transparent),
      ]);
      expect(pixelAt(image, 20, 3).a).toBeLessThanOrEqual(5);
      expect(pixelAt(image, 5, 20).a).toBeGreaterThanOrEqual(250);
    },
    ["resize"],
  );

  check(
    "resize",
    "cover fills the box and position picks the part kept",
    async () => {
      const input = await halvesImage(40, 20);
      const left = await run(input, [resize(20, 20, "cover", "left")]);
      expect([left.image.width, left.image.height]).toEqual([20, 20]);
      expect(colorDistance(meanOf(left.image), Colors.red)).toBeLessThanOrEqual(EXACT);
      const right = await run(input, [resize(20, 20, "cover", "right")]);
      expect(colorDistance(meanOf(right.image), Colors.blue)).toBeLessThanOrEqual(EXACT);
      const centre = await run(input, [resize(20, 20, "cover", "center")]);
      expectColor(centre.image, 3, 10, Colors.red);
      expectColor(centre.image, 16, 10, Colors.blue);

      const tall = await topBottomImage(20, 40, Colors.red, Colors.blue);
      const bottom = await run(tall, [resize(20, 20, "cover", "bottom")]);
      expect(colorDistance(meanOf(bottom.image), Colors.blue)).toBeLessThanOrEqual(EXACT);
    },
    ["resize"],
  );

  check(
    "resize",
    "downscales a jpeg",
    async () => {
      const input = await halvesImage(400, 200, Colors.red, Colors.blue, "jpeg");
      const { image } = await run(input, [resize(40, 20, "fill")]);
      expect([image.width, image.height]).toEqual([40, 20]);
      expectColor(image, 5, 10, Colors.red, LOSSY);
      expectColor(image, 34, 10, Colors.blue, LOSSY);
    },
    ["resize"],
  );
}

export function describeStepsInOrder(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  describe("steps in order", () => {
    check(
      "encode",
      "runs several steps in the given order in one call",
      async () => {
        // Cropping x 20..59 of the 80 x 40 quadrants gives [red | green] over [blue | yellow];
        // mirroring gives [green | red] over [yellow | blue]; a clockwise turn of the 20 x 10
        // resize gives [yellow | green] over [blue | red] at 10 x 20.
        const input = await quadrantsImage(80, 40);
        const { image } = await run(input, [
          { type: "crop", left: 20, top: 0, width: 40, height: 40 },
          { type: "mirror", mode: "horizontal" },
          {
            type: "resize",
            width: 20,
            height: 10,
            fit: "fill",
            position: "center",
            background: Colors.black,
          },
          { type: "rotate", angle: 90, background: Colors.black },
        ]);
        expect([image.width, image.height]).toEqual([10, 20]);
        expectColor(image, 2, 4, DEFAULT_QUADRANTS.bottomRight);
        expectColor(image, 7, 4, DEFAULT_QUADRANTS.topRight);
        expectColor(image, 2, 15, DEFAULT_QUADRANTS.bottomLeft);
        expectColor(image, 7, 15, DEFAULT_QUADRANTS.topLeft);
      },
      ["crop", "mirror", "resize", "rotate"],
    );
  });
}
