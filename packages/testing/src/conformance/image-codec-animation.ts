import type { ImageFormat } from "@pixport/core";
import { sniffImageFormat } from "@pixport/core";
import type { Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { rotatedSize } from "@pixport/core/adapter-kit";
import sharp from "sharp";
import { expect, it, type TestContext } from "vitest";
import {
  Colors,
  colorDistance,
  decodeRaw,
  encodeAnimation,
  paintPixels,
  pixelAt,
  type RawImage,
} from "../fixtures/images.js";
import type { FormatsHarness } from "./image-codec-formats.js";

/** The colours of the left half of {@link threeFrames}' frames, in order. */
const COLORS: readonly Rgba[] = [Colors.red, Colors.green, Colors.blue];

/** Three 40x20 frames (left half red, green, blue; right half white), delays 100/200/300 ms, loop 2. */
export const threeFrames = (format: "gif" | "webp") =>
  encodeAnimation(
    [
      paintPixels(40, 20, (x) => (x < 20 ? Colors.red : Colors.white)),
      paintPixels(40, 20, (x) => (x < 20 ? Colors.green : Colors.white)),
      paintPixels(40, 20, (x) => (x < 20 ? Colors.blue : Colors.white)),
    ],
    format,
    { delays: [100, 200, 300], loop: 2 },
  );

/** A step of every kind, with what it must do to each frame of {@link threeFrames}. */
const ANIMATION_CASES: readonly {
  name: string;
  steps: TransformStep[];
  check: (image: RawImage, index: number) => void;
}[] = [
  {
    name: "resize",
    steps: [
      {
        type: "resize",
        width: 20,
        height: 10,
        fit: "fill",
        position: "center",
        background: Colors.black,
      },
    ],
    check: (image, index) => {
      expect([image.width, image.height]).toEqual([20, 10]);
      expect(colorDistance(pixelAt(image, 2, 5), COLORS[index]!)).toBeLessThan(60);
    },
  },
  {
    name: "mirror",
    steps: [{ type: "mirror", mode: "horizontal" }],
    check: (image, index) => {
      expect(colorDistance(pixelAt(image, 37, 10), COLORS[index]!)).toBeLessThan(60);
      expect(colorDistance(pixelAt(image, 2, 10), Colors.white)).toBeLessThan(60);
    },
  },
  {
    name: "rotate 90",
    steps: [{ type: "rotate", angle: 90, background: Colors.black }],
    check: (image, index) => {
      expect([image.width, image.height]).toEqual([20, 40]);
      // Clockwise: the left half goes to the top.
      expect(colorDistance(pixelAt(image, 10, 5), COLORS[index]!)).toBeLessThan(60);
    },
  },
  {
    name: "rotate 30 (one canvas for every frame)",
    steps: [{ type: "rotate", angle: 30, background: Colors.black }],
    check: (image) => {
      const size = rotatedSize({ width: 40, height: 20 }, 30);
      expect([image.width, image.height]).toEqual([size.width, size.height]);
    },
  },
  {
    name: "crop",
    steps: [{ type: "crop", left: 0, top: 0, width: 10, height: 10 }],
    check: (image, index) => {
      expect([image.width, image.height]).toEqual([10, 10]);
      expect(colorDistance(pixelAt(image, 5, 5), COLORS[index]!)).toBeLessThan(60);
    },
  },
  {
    name: "blur",
    steps: [{ type: "blur", sigma: 1 }],
    check: (image, index) => {
      expect(colorDistance(pixelAt(image, 5, 10), COLORS[index]!)).toBeLessThan(60);
    },
  },
  {
    name: "modulate",
    steps: [
      {
        type: "modulate",
        brightness: 0,
        saturation: -100,
        hue: 0,
        lightness: 0,
        exposure: 0,
        contrast: 0,
      },
    ],
    check: (image) => {
      const pixel = pixelAt(image, 5, 10);
      expect(Math.max(pixel.r, pixel.g, pixel.b) - Math.min(pixel.r, pixel.g, pixel.b)).toBeLessThan(40);
    },
  },
];

/** Decodes every frame of `bytes` (one strip) with its frame facts. */
async function decodeFrames(bytes: Uint8Array): Promise<{
  frames: RawImage[];
  delay: number[] | undefined;
  loop: number | undefined;
  format: string | undefined;
}> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const metadata = await sharp(buffer, { pages: -1 }).metadata();
  const { data, info } = await sharp(buffer, { pages: -1 })
    .ensureAlpha()
    .raw({ depth: "uchar" })
    .toBuffer({ resolveWithObject: true });
  const height = metadata.pageHeight ?? info.height;
  const count = Math.round(info.height / height);
  const frames: RawImage[] = [];
  for (let index = 0; index < count; index += 1) {
    const size = info.width * height * 4;
    frames.push({
      data: data.subarray(index * size, (index + 1) * size),
      width: info.width,
      height,
      channels: 4,
    });
  }
  return { frames, delay: metadata.delay, loop: metadata.loop, format: metadata.format };
}

/**
 * Animations (for the formats in `capabilities.animation`) keep their frames, delays and loop
 * count through every step and between GIF and WebP.
 */
export function describeAnimations(h: FormatsHarness): void {
  for (const format of ["gif", "webp"] as const) describeAnimation(h, format);
}

function describeAnimation(h: FormatsHarness, format: "gif" | "webp"): void {
  const { name, codec, declares, transform, overlay } = h;
  const animated = (context: TestContext, format: ImageFormat) => {
    declares(context, format);
    if (!(codec().capabilities.animation ?? []).includes(format)) {
      context.skip(`the ${name} codec does not declare ${format} animation`);
    }
  };
  it(`${format} animation: probe counts the frames`, async (context) => {
    animated(context, format);
    expect(await codec().probe(await threeFrames(format))).toEqual({
      format,
      width: 40,
      height: 20,
      frames: 3,
    });
  });
  for (const { name: caseName, steps, check } of ANIMATION_CASES) {
    it(`${format} animation keeps 3 frames, delays and loop through ${caseName}`, async (context) => {
      animated(context, format);
      const encoded = await transform(await threeFrames(format), steps, { format });
      expect(encoded.frames).toBe(3);
      const decoded = await decodeFrames(encoded.data);
      expect(decoded.frames).toHaveLength(3);
      expect(decoded.delay).toEqual([100, 200, 300]);
      expect(decoded.loop).toBe(2);
      expect([encoded.width, encoded.height]).toEqual([decoded.frames[0]!.width, decoded.frames[0]!.height]);
      for (const [index, image] of decoded.frames.entries()) check(image, index);
    });
  }

  it(`${format} animation: the overlay lands on every frame`, async (context) => {
    animated(context, format);
    const encoded = await transform(await threeFrames(format), [await overlay(Colors.black, 25, 5)], {
      format,
    });
    const decoded = await decodeFrames(encoded.data);
    expect(decoded.frames).toHaveLength(3);
    for (const [index, image] of decoded.frames.entries()) {
      expect(colorDistance(pixelAt(image, 30, 10), Colors.black)).toBeLessThan(60);
      expect(colorDistance(pixelAt(image, 5, 10), COLORS[index]!)).toBeLessThan(60);
    }
  });

  const other = format === "gif" ? "webp" : "gif";
  it(`${format} animation converts to ${other} and back with its frames`, async (context) => {
    animated(context, format);
    animated(context, other);
    const there = await transform(await threeFrames(format), [], { format: other });
    expect(sniffImageFormat(there.data)).toBe(other);
    const back = await transform(there.data, [], { format });
    const decoded = await decodeFrames(back.data);
    expect(decoded.frames).toHaveLength(3);
    expect(decoded.delay).toEqual([100, 200, 300]);
    for (const [index, image] of decoded.frames.entries()) {
      expect(colorDistance(pixelAt(image, 5, 10), COLORS[index]!)).toBeLessThan(60);
    }
  });

  it(`${format} animation written to png keeps the first frame`, async (context) => {
    animated(context, format);
    const encoded = await transform(await threeFrames(format), [], { format: "png" });
    expect(encoded.frames ?? 1).toBe(1);
    const image = await decodeRaw(encoded.data);
    expect([image.width, image.height]).toEqual([40, 20]);
    expect(colorDistance(pixelAt(image, 5, 10), Colors.red)).toBeLessThan(60);
  });
}
