import type { EncodedImage, ImageCodec, ImageFormat } from "@pixport/core";
import { IMAGE_FORMATS, sniffImageFormat } from "@pixport/core";
import type { OutputOptions, Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { stepOutputSize } from "@pixport/core/adapter-kit";
import { describe, expect, it, type TestContext } from "vitest";
import {
  Colors,
  colorDistance,
  decodeRaw,
  encodePixels,
  luminanceStats,
  meanOf,
  paintPixels,
  pixelAt,
  quadrantsImage,
} from "../fixtures/images.js";
import { describeAnimations, threeFrames } from "./image-codec-animation.js";

const LIMITS = { maxInputPixels: 50_000_000 };

/** Per-channel tolerance per format on flat colour areas (AVIF and WebP are lossy; GIF is paletted). */
const TOLERANCE: Readonly<Record<ImageFormat, number>> = {
  jpeg: 40,
  png: 6,
  webp: 40,
  avif: 40,
  gif: 12,
  tiff: 6,
};

/** A step of every kind, with what it must do to a 40x30 quadrants image (red, green / blue, yellow). */
const STEPS: readonly { name: string; step: TransformStep; topLeft: Rgba | null }[] = [
  { name: "mirror", step: { type: "mirror", mode: "horizontal" }, topLeft: Colors.green },
  { name: "crop", step: { type: "crop", left: 20, top: 15, width: 20, height: 15 }, topLeft: Colors.yellow },
  { name: "rotate 90", step: { type: "rotate", angle: 90, background: Colors.black }, topLeft: Colors.blue },
  {
    name: "resize",
    step: {
      type: "resize",
      width: 20,
      height: 16,
      fit: "fill",
      position: "center",
      background: Colors.black,
    },
    topLeft: Colors.red,
  },
  { name: "blur", step: { type: "blur", sigma: 1 }, topLeft: Colors.red },
  {
    name: "modulate",
    step: {
      type: "modulate",
      brightness: 0,
      saturation: -100,
      hue: 0,
      lightness: 0,
      exposure: 0,
      contrast: 0,
    },
    topLeft: null,
  },
  {
    name: "overlay",
    step: { type: "overlay", layers: [] },
    topLeft: Colors.white,
  },
];

/** A solid frame of `color`. */
function frame(width: number, height: number, color: Rgba) {
  return paintPixels(width, height, () => color);
}

/** What the format and animation tests share: the codec, its name, and transform helpers. */
export interface FormatsHarness {
  name: string;
  codec: () => ImageCodec;
  /** Skips the test unless the codec reads and writes `format`. */
  declares(context: TestContext, format: ImageFormat): void;
  /** Transforms `input` with a black flatten background (output format: the input's unless given). */
  transform(
    input: Uint8Array,
    steps: TransformStep[],
    output?: Partial<OutputOptions>,
  ): Promise<EncodedImage>;
  /** An overlay step of `color` squares at (`left`, `top`). */
  overlay(color: Rgba, left: number, top: number): Promise<TransformStep>;
}

function createFormatsHarness(name: string, codec: () => ImageCodec): FormatsHarness {
  const declares = (context: TestContext, format: ImageFormat) => {
    const { inputFormats, outputFormats } = codec().capabilities;
    if (!inputFormats.includes(format) || !outputFormats.includes(format)) {
      context.skip(`the ${name} codec does not declare ${format}`);
    }
  };
  const transform = (input: Uint8Array, steps: TransformStep[], output: Partial<OutputOptions> = {}) =>
    codec().transform({
      input,
      steps,
      output: {
        format: output.format ?? sniffImageFormat(input) ?? "png",
        quality: output.quality ?? 90,
        flattenBackground: Colors.black,
      },
      limits: LIMITS,
    });
  /** An overlay step of `color` squares at (`left`, `top`). */
  const overlay = async (color: Rgba, left: number, top: number): Promise<TransformStep> => ({
    type: "overlay",
    layers: [
      {
        input: await encodePixels(frame(10, 10, color), "png"),
        left,
        top,
        width: 10,
        height: 10,
        repeat: "no-repeat",
        opacity: 1,
      },
    ],
  });

  return { name, codec, declares, transform, overlay };
}

/**
 * The format part of the ImageCodec conformance suite: every format the codec declares, read and
 * written, through every step; animations (for the formats in `capabilities.animation`) keep their
 * frames, delays and loop count through every step and between GIF and WebP; smart crops keep the
 * detailed corner; `sample` reports alpha and frames. Formats or features a codec does not declare
 * are skipped with that reason (the core refuses them before the codec is called).
 */
export function describeImageCodecFormats(name: string, codec: () => ImageCodec): void {
  describe(`formats: ${name}`, () => {
    const harness = createFormatsHarness(name, codec);
    describeFormatRoundTrips(harness);
    describeAnimations(harness);
    describeSmartCropAndSample(harness);
  });
}

/** Every declared format read and written, through every step. */
function describeFormatRoundTrips(h: FormatsHarness): void {
  const { codec, declares, transform, overlay } = h;
  for (const format of IMAGE_FORMATS) {
    it(`${format}: probe reads the header, transform writes ${format}`, async (context) => {
      declares(context, format);
      const input = await quadrantsImage(40, 30, undefined, format, { quality: 95 });
      expect(sniffImageFormat(input)).toBe(format);
      expect(await codec().probe(input)).toMatchObject({ format, width: 40, height: 30 });
      const encoded = await transform(input, [], { format });
      expect(sniffImageFormat(encoded.data)).toBe(format);
      const image = await decodeRaw(encoded.data);
      expect(colorDistance(pixelAt(image, 5, 5), Colors.red)).toBeLessThanOrEqual(TOLERANCE[format]);
      expect(colorDistance(pixelAt(image, 35, 25), Colors.yellow)).toBeLessThanOrEqual(TOLERANCE[format]);
    });

    for (const { name: stepName, step, topLeft } of STEPS) {
      it(`${format}: ${stepName}`, async (context) => {
        declares(context, format);
        if (!codec().capabilities.steps.includes(step.type)) context.skip(`no ${step.type} step`);
        const input = await quadrantsImage(40, 30, undefined, format, { quality: 95 });
        const concrete = step.type === "overlay" ? await overlay(Colors.white, 0, 0) : step;
        const encoded = await transform(input, [concrete], { format });
        expect(sniffImageFormat(encoded.data)).toBe(format);
        const expected = stepOutputSize(concrete, { width: 40, height: 30 });
        expect({ width: encoded.width, height: encoded.height }).toEqual(expected);
        const image = await decodeRaw(encoded.data);
        expect({ width: image.width, height: image.height }).toEqual(expected);
        if (topLeft !== null) {
          expect(colorDistance(pixelAt(image, 2, 2), topLeft)).toBeLessThanOrEqual(TOLERANCE[format] + 10);
        } else {
          // Desaturated: the red corner turned grey (a palette or lossy chroma leaves a little tint).
          const pixel = pixelAt(image, 2, 2);
          expect(Math.max(pixel.r, pixel.g, pixel.b) - Math.min(pixel.r, pixel.g, pixel.b)).toBeLessThan(45);
        }
      });
    }
  }
}

/** Smart crops keep the detailed corner; `sample` reports alpha and frames. */
function describeSmartCropAndSample(h: FormatsHarness): void {
  const { name, codec, transform } = h;
  it("entropy crop keeps a small detailed subject in a flat picture", async (context) => {
    if (!(codec().capabilities.smartCrop ?? []).includes("entropy")) {
      context.skip(`the ${name} codec does not declare the entropy crop`);
    }
    // 300x100, flat grey, with a 40x40 checkerboard near the right edge.
    const input = await encodePixels(
      paintPixels(300, 100, (x, y) => {
        if (x >= 250 && x < 290 && y >= 30 && y < 70)
          return ((x >> 2) + (y >> 2)) % 2 === 0 ? Colors.black : Colors.white;
        return Colors.grey;
      }),
      "png",
    );
    for (const position of ["entropy", "attention"] as const) {
      if (!(codec().capabilities.smartCrop ?? []).includes(position)) continue;
      const encoded = await transform(input, [
        { type: "resize", width: 100, height: 100, fit: "cover", position, background: Colors.black },
      ]);
      const image = await decodeRaw(encoded.data);
      expect([image.width, image.height]).toEqual([100, 100]);
      // The subject is in the result: strong contrast where a centre crop would be flat grey.
      expect(luminanceStats(image).stddev, `${position} keeps the checkerboard`).toBeGreaterThan(30);
    }
  });

  it("sample: a small copy, alpha meaning 'some pixel is not opaque', and the frame count", async (context) => {
    const subject = codec();
    if (subject.sample === undefined) context.skip(`the ${name} codec has no sample()`);
    const sample = subject.sample!.bind(subject);
    const opaqueWithChannel = await encodePixels(frame(400, 200, Colors.blue), "png");
    const small = await sample(opaqueWithChannel, 100, LIMITS);
    expect([small.width, small.height]).toEqual([100, 50]);
    expect(small.data.byteLength).toBe(100 * 50 * 4);
    expect(small.hasAlpha).toBe(false);
    expect(small.frames).toBe(1);
    expect(colorDistance(meanOf({ ...small, channels: 4 }), Colors.blue)).toBeLessThan(10);
    const translucent = await encodePixels(
      paintPixels(40, 40, (x) => (x < 20 ? Colors.red : { ...Colors.red, alpha: 0.5 })),
      "png",
    );
    expect((await sample(translucent, 100, LIMITS)).hasAlpha).toBe(true);
    // One pixel short of opaque in 80,000: too small to show in a 100 px sample, still alpha.
    const onePixel = await encodePixels(
      paintPixels(400, 200, (x, y) =>
        x === 301 && y === 77 ? { ...Colors.blue, alpha: 254 / 255 } : Colors.blue,
      ),
      "png",
    );
    expect((await sample(onePixel, 100, LIMITS)).hasAlpha, "one pixel at alpha 254").toBe(true);
    const tiny = await sample(await encodePixels(frame(8, 6, Colors.green), "png"), 100, LIMITS);
    expect([tiny.width, tiny.height], "never enlarged").toEqual([8, 6]);
    if ((subject.capabilities.animation ?? []).includes("gif")) {
      expect((await sample(await threeFrames("gif"), 100, LIMITS)).frames).toBe(3);
    }
  });
}
