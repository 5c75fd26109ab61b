/**
 * Cross-codec comparison: every transform step runs on the same fixtures through the sharp codec
 * and the jimp codec, and the results must agree. Encoded bytes are never compared (the encoders
 * differ); both outputs are decoded with one decoder and compared by size and PSNR.
 *
 * PSNR is computed over premultiplied RGBA on 8-bit samples: 10 * log10(255² / MSE). Rough
 * reading: above 40 dB the images are visually identical, 30-40 dB differences are only visible
 * when flicking between them, 25-30 dB shows small local differences (edges, a pixel of offset).
 */
import { createJimpCodec } from "@pixport/codec-jimp";
import { createSharpCodec } from "@pixport/codec-sharp";
import type { ImageCodec, ImageFormat } from "@pixport/core";
import type { OverlayLayer, Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { stepOutputSize } from "@pixport/core/adapter-kit";
import {
  Colors,
  decodeRaw,
  encodePixels,
  paintPixels,
  quadrantsImage,
  type RawImage,
} from "@pixport/testing";
import { beforeAll, describe, expect, it } from "vitest";

/** A photo-like 96 x 64 image: smooth gradients, a disc, a hard-edged bar and mild noise. */
function photoPixels(width = 96, height = 64, alpha = false) {
  let seed = 7;
  const noise = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return (seed >>> 24) / 255 - 0.5;
  };
  return paintPixels(width, height, (x, y) => {
    const inDisc = (x - width * 0.35) ** 2 + (y - height * 0.5) ** 2 < (height * 0.3) ** 2;
    const inBar = x > width * 0.7 && x < width * 0.8;
    const r = inDisc ? 220 : (x / width) * 200 + 30;
    const g = inBar ? 40 : (y / height) * 180 + 40;
    const b = inDisc ? 60 : ((x + y) / (width + height)) * 150 + 80;
    const jitter = noise() * 16;
    const clamp = (value: number) => Math.max(0, Math.min(255, Math.round(value + jitter)));
    const transparency = alpha ? Math.min(1, Math.max(0, 1.2 - x / width)) : 1;
    return { r: clamp(r), g: clamp(g), b: clamp(b), alpha: transparency };
  });
}

/** PSNR over premultiplied RGBA: the colour of a fully transparent pixel is meaningless, so it does not count. */
function psnr(first: RawImage, second: RawImage): number {
  let sum = 0;
  for (let offset = 0; offset < first.data.length; offset += 4) {
    const alphaFirst = first.data[offset + 3]! / 255;
    const alphaSecond = second.data[offset + 3]! / 255;
    for (let channel = 0; channel < 3; channel += 1) {
      const difference =
        first.data[offset + channel]! * alphaFirst - second.data[offset + channel]! * alphaSecond;
      sum += difference * difference;
    }
    const difference = first.data[offset + 3]! - second.data[offset + 3]!;
    sum += difference * difference;
  }
  const mse = sum / first.data.length;
  return mse === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((255 * 255) / mse);
}

const modulate = (
  fields: Partial<
    Record<"brightness" | "saturation" | "exposure" | "contrast" | "lightness" | "hue", number>
  >,
): TransformStep => ({
  type: "modulate",
  brightness: 0,
  saturation: 0,
  exposure: 0,
  contrast: 0,
  lightness: 0,
  hue: 0,
  ...fields,
});
const resize = (
  width: number,
  height: number,
  fit: "fill" | "contain" | "cover",
  position: "center" | "top" | "bottom-right" = "center",
  background: Rgba = Colors.green,
): TransformStep => ({ type: "resize", width, height, fit, position, background });

interface Case {
  title: string;
  steps: (fixtures: Fixtures) => TransformStep[];
  /** Minimum PSNR in dB; the reason for each value is in the comment of its group. */
  minPsnr: number;
  input?: "photo" | "photoJpeg" | "photoAlpha";
  format?: ImageFormat;
}

interface Fixtures {
  photo: Uint8Array;
  photoJpeg: Uint8Array;
  photoAlpha: Uint8Array;
  mark: Uint8Array;
  tile: Uint8Array;
}

const layer = (input: Uint8Array, fields: Partial<Omit<OverlayLayer, "input">>): OverlayLayer => ({
  input,
  left: 0,
  top: 0,
  width: 16,
  height: 16,
  repeat: "no-repeat",
  opacity: 1,
  ...fields,
});

const CASES: Case[] = [
  // Pixel moves with no resampling: both codecs must be exact (infinite PSNR); 60 dB leaves room
  // for nothing but rounding.
  { title: "re-encode (no steps)", steps: () => [], minPsnr: 60 },
  { title: "mirror horizontal", steps: () => [{ type: "mirror", mode: "horizontal" }], minPsnr: 60 },
  { title: "mirror both", steps: () => [{ type: "mirror", mode: "both" }], minPsnr: 60 },
  { title: "crop", steps: () => [{ type: "crop", left: 10, top: 7, width: 50, height: 40 }], minPsnr: 60 },
  { title: "rotate 90", steps: () => [{ type: "rotate", angle: 90, background: Colors.black }], minPsnr: 60 },
  {
    title: "rotate 270",
    steps: () => [{ type: "rotate", angle: 270, background: Colors.black }],
    minPsnr: 60,
  },
  // Resampling: jimp's two-pass resampler (area averaging to shrink, linear to enlarge) against
  // libvips' lanczos3. Measured 42-47 dB shrinking and 39 dB enlarging (lanczos sharpens the noise
  // that linear interpolation smooths); the floors leave ~6 dB for resampler rounding, and are
  // still far above what a misplaced letterbox or crop window (a 1 px shift: ~20 dB) gives.
  { title: "resize fill (shrink)", steps: () => [resize(48, 40, "fill")], minPsnr: 36 },
  { title: "resize fill (enlarge)", steps: () => [resize(150, 100, "fill")], minPsnr: 33 },
  { title: "resize contain (letterbox)", steps: () => [resize(60, 60, "contain")], minPsnr: 36 },
  {
    title: "resize contain top, transparent",
    steps: () => [resize(60, 60, "contain", "top", Colors.transparent)],
    minPsnr: 36,
  },
  { title: "resize cover", steps: () => [resize(40, 40, "cover")], minPsnr: 36 },
  { title: "resize cover bottom-right", steps: () => [resize(30, 50, "cover", "bottom-right")], minPsnr: 36 },
  // Arbitrary angles: the jimp codec reproduces libvips' canvas geometry and bilinear sampling, so
  // only the edge anti-aliasing differs (premultiplied here, straight in libvips). Measured 54-55
  // dB; a half-pixel misplacement of the canvas drops this fixture to ~26 dB.
  {
    title: "rotate 30 (green corners)",
    steps: () => [{ type: "rotate", angle: 30, background: Colors.green }],
    minPsnr: 45,
  },
  {
    title: "rotate 200 transparent",
    steps: () => [{ type: "rotate", angle: 200, background: Colors.transparent }],
    minPsnr: 45,
  },
  // Blur: the same kernel (libvips' Gaussian cut at 0.2 of its peak). Short kernels are convolved
  // exactly (measured 75 dB: rounding only); long ones are three box passes of equal variance, a
  // slightly different shape (measured 43-49 dB).
  { title: "blur sigma 1", steps: () => [{ type: "blur", sigma: 1 }], minPsnr: 60 },
  { title: "blur sigma 3", steps: () => [{ type: "blur", sigma: 3 }], minPsnr: 42 },
  { title: "blur sigma 12 (box passes)", steps: () => [{ type: "blur", sigma: 12 }], minPsnr: 38 },
  {
    title: "blur sigma 3 on alpha",
    steps: () => [{ type: "blur", sigma: 3 }],
    minPsnr: 42,
    input: "photoAlpha",
  },
  // Modulate: the same colour maths (sRGB → CIE LCh with D65 white, exposure and contrast on the
  // sRGB values) in float, with tables at 16-bit precision; measured 50-61 dB, differences are
  // rounding.
  { title: "modulate brightness", steps: () => [modulate({ brightness: 40 })], minPsnr: 45 },
  { title: "modulate saturation", steps: () => [modulate({ saturation: -60 })], minPsnr: 45 },
  { title: "modulate hue", steps: () => [modulate({ hue: 120 })], minPsnr: 45 },
  { title: "modulate lightness", steps: () => [modulate({ lightness: -25 })], minPsnr: 45 },
  { title: "modulate exposure", steps: () => [modulate({ exposure: 30 })], minPsnr: 45 },
  { title: "modulate contrast", steps: () => [modulate({ contrast: 60 })], minPsnr: 45 },
  {
    title: "modulate everything",
    steps: () => [
      modulate({ exposure: 20, brightness: -10, saturation: 30, hue: 45, lightness: 5, contrast: 25 }),
    ],
    minPsnr: 44,
  },
  {
    title: "modulate on alpha",
    steps: () => [modulate({ brightness: 30, hue: 90 })],
    minPsnr: 45,
    input: "photoAlpha",
  },
  // Overlays: each overlay is resampled to its box (see resize; the 10 px quadrant tile has only
  // hard edges, the worst case for two different resamplers), the compositing itself is exact.
  // Measured 38 and 34 dB.
  {
    title: "overlay placed, clipped and semi-transparent",
    steps: ({ mark }) => [
      {
        type: "overlay",
        layers: [
          layer(mark, { left: 10, top: 12, width: 30, height: 20 }),
          layer(mark, { left: -8, top: 50, opacity: 0.5 }),
        ],
      },
    ],
    minPsnr: 33,
  },
  {
    title: "overlay repeat, repeat-x, repeat-y",
    steps: ({ tile }) => [
      {
        type: "overlay",
        layers: [
          layer(tile, { left: 3, top: -5, width: 10, height: 10, repeat: "repeat", opacity: 0.6 }),
          layer(tile, { top: 20, width: 12, height: 12, repeat: "repeat-x" }),
          layer(tile, { left: 70, width: 8, height: 8, repeat: "repeat-y" }),
        ],
      },
    ],
    minPsnr: 30,
  },
  // Lossy outputs. jpeg: libjpeg (4:2:0 chroma) against jpeg-js at quality 90, measured 31 dB,
  // the ceiling of two different encoders. webp: both are libwebp with default settings, which
  // measured bit-identical pixels; 40 dB allows for a different libwebp version.
  { title: "convert to jpeg", steps: () => [], minPsnr: 28, format: "jpeg" },
  { title: "convert to webp", steps: () => [], minPsnr: 40, format: "webp" },
  // A chain on a jpeg input: decoders, resampling, rotation and blur together (measured 40.5 dB).
  {
    title: "jpeg input, resize + rotate + blur",
    steps: () => [
      resize(80, 50, "fill"),
      { type: "rotate", angle: 15, background: Colors.white },
      { type: "blur", sigma: 2 },
    ],
    minPsnr: 34,
    input: "photoJpeg",
  },
];

describe("sharp and jimp agree on every step", () => {
  let sharpCodec: ImageCodec;
  let jimpCodec: ImageCodec;
  let fixtures: Fixtures;
  beforeAll(async () => {
    sharpCodec = createSharpCodec();
    jimpCodec = createJimpCodec();
    fixtures = {
      photo: await encodePixels(photoPixels(), "png"),
      photoJpeg: await encodePixels(photoPixels(), "jpeg", { quality: 92 }),
      photoAlpha: await encodePixels(photoPixels(96, 64, true), "png"),
      mark: await encodePixels(photoPixels(20, 20), "png"),
      tile: await quadrantsImage(10, 10),
    };
  });

  it("covers every step type", () => {
    const covered = new Set(CASES.flatMap((entry) => entry.steps(fixtures).map((step) => step.type)));
    expect([...covered].sort()).toEqual([
      "blur",
      "crop",
      "mirror",
      "modulate",
      "overlay",
      "resize",
      "rotate",
    ]);
  });

  for (const entry of CASES) {
    it(`${entry.title}: same size, PSNR >= ${entry.minPsnr} dB`, async () => {
      const input = fixtures[entry.input ?? "photo"];
      const steps = entry.steps(fixtures);
      const format = entry.format ?? (entry.input === "photoJpeg" ? "jpeg" : "png");
      const request = {
        input,
        steps,
        output: { format, quality: 90, flattenBackground: Colors.black },
        limits: { maxInputPixels: 50_000_000 },
      } as const;
      const [fromSharp, fromJimp] = await Promise.all([
        sharpCodec.transform(request),
        jimpCodec.transform(request),
      ]);
      const header = (await sharpCodec.probe(input))!;
      const expected = steps.reduce((size, step) => stepOutputSize(step, size), {
        width: header.width,
        height: header.height,
      });
      expect({ width: fromJimp.width, height: fromJimp.height }).toEqual(expected);
      expect({ width: fromSharp.width, height: fromSharp.height }).toEqual(expected);
      const [a, b] = [await decodeRaw(fromSharp.data), await decodeRaw(fromJimp.data)];
      expect([b.width, b.height]).toEqual([a.width, a.height]);
      const value = psnr(a, b);
      if (process.env.PIXPORT_PRINT_PSNR) console.log(`${entry.title}: ${value.toFixed(2)} dB`);
      expect(value).toBeGreaterThanOrEqual(entry.minPsnr);
    });
  }
});
