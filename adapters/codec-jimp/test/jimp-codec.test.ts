import { createJimpCodec, jimpImageCodecOptionsSchema } from "@pixport/codec-jimp";
import { type DecodeLimits, ErrorCodes, isImagePipelineError } from "@pixport/core";
import type { TransformStep } from "@pixport/core/adapter-kit";
import { Colors, decodeRaw, noiseImage, pixelAt, pngBomb, solidImage, truncate } from "@pixport/testing";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { boxWidths, gaussianKernel } from "../src/steps/blur.js";

const output = { format: "png", quality: 90, flattenBackground: Colors.black } as const;
const limits: DecodeLimits = { maxInputPixels: 50_000_000 };
const codec = createJimpCodec();

async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (caught: unknown) => caught,
  );
  expect(isImagePipelineError(error), String(error)).toBe(true);
  return error as { code: string; message: string };
}

/** A JPEG whose frame header claims `width` x `height`, followed by no real image data. */
function fakeJpeg(width: number, height: number, sof = 0xc0): Uint8Array {
  const frame = [0xff, sof, 0x00, 0x11, 0x08, height >> 8, height & 255, width >> 8, width & 255, 0x03];
  for (let component = 1; component <= 3; component += 1) frame.push(component, 0x11, 0x00);
  return Uint8Array.from([0xff, 0xd8, ...frame, 0xff, 0xda, 0x00, 0x02, 0xff, 0xd9]);
}

/** A WebP whose VP8X header claims `width` x `height` (and is animated when asked). */
function fakeWebp(width: number, height: number, animated = false): Uint8Array {
  const chunk = Buffer.alloc(18);
  chunk.write("VP8X", 0, "ascii");
  chunk.writeUInt32LE(10, 4);
  chunk[8] = animated ? 0x02 : 0;
  chunk.writeUIntLE(width - 1, 12, 3);
  chunk.writeUIntLE(height - 1, 15, 3);
  const riff = Buffer.alloc(12);
  riff.write("RIFF", 0, "ascii");
  riff.writeUInt32LE(4 + chunk.length, 4);
  riff.write("WEBP", 8, "ascii");
  return Buffer.concat([riff, chunk]);
}

describe("createJimpCodec options", () => {
  it("applies the documented defaults", () => {
    expect(jimpImageCodecOptionsSchema.parse({})).toEqual({
      maxInputPixels: 50_000_000,
      sourceCacheBytes: 64 * 1024 * 1024,
    });
  });

  it.each([
    [{ maxInputPixels: 0 }, "maxInputPixels"],
    [{ maxInputPixels: 1.5 }, "maxInputPixels"],
    [{ concurrency: 2 }, "concurrency"],
  ])("rejects %o with INVALID_CONFIGURATION naming %s", (options, path) => {
    let caught: unknown;
    try {
      createJimpCodec(options as never);
    } catch (error) {
      caught = error;
    }
    expect(isImagePipelineError(caught)).toBe(true);
    expect((caught as { code: string }).code).toBe(ErrorCodes.INVALID_CONFIGURATION);
    expect((caught as Error).message).toContain(path);
    expect((caught as Error).message).toContain("createJimpCodec");
  });

  it("uses options.maxInputPixels when the request carries no usable limit", async () => {
    const small = createJimpCodec({ maxInputPixels: 100 });
    const input = await solidImage(20, 20, Colors.red, "png");
    const request = { input, steps: [], output, limits: { maxInputPixels: Number.NaN } };
    expect((await rejection(small.transform(request))).code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
  });
});

describe("header reading", () => {
  it("reads lossless (VP8L) and extended (VP8X) WebP headers", async () => {
    const lossless = await sharp({ create: { width: 33, height: 17, channels: 4, background: "#f00" } })
      .webp({ lossless: true })
      .toBuffer();
    expect(await codec.probe(lossless)).toEqual({ format: "webp", width: 33, height: 17 });
    const withAlpha = await sharp({
      create: { width: 21, height: 9, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } },
    })
      .webp({ quality: 80 })
      .toBuffer();
    expect(await codec.probe(withAlpha)).toEqual({ format: "webp", width: 21, height: 9 });
  });

  it("applies EXIF orientation carried by a WebP", async () => {
    const rotated = await sharp({ create: { width: 30, height: 10, channels: 3, background: "#0f0" } })
      .webp()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    expect(await codec.probe(rotated)).toEqual({ format: "webp", width: 10, height: 30 });
    const result = await codec.transform({ input: rotated, steps: [], output, limits });
    expect([result.width, result.height]).toEqual([10, 30]);
  });

  it("probe reports a header-only bomb's claimed size without decoding", async () => {
    expect(await codec.probe(fakeJpeg(60_000, 60_000))).toEqual({
      format: "jpeg",
      width: 60_000,
      height: 60_000,
    });
    expect(await codec.probe(fakeWebp(16_000, 16_000))).toEqual({
      format: "webp",
      width: 16_000,
      height: 16_000,
    });
  });
});

describe("limits and refusals before decoding", () => {
  it.each([
    ["jpeg", () => fakeJpeg(60_000, 60_000)],
    ["webp", () => fakeWebp(16_000, 16_000)],
    ["png", () => pngBomb(20_000, 20_000)],
  ])("refuses an over-limit %s from its header with IMAGE_TOO_LARGE, naming the size", async (_, make) => {
    const error = await rejection(codec.transform({ input: make(), steps: [], output, limits }));
    expect(error.code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
    expect(error.message).toMatch(/\d+ x \d+ pixels/);
  });

  it("refuses an over-limit overlay before decoding the base", async () => {
    const base = await solidImage(20, 20, Colors.white, "png");
    const step: TransformStep = {
      type: "overlay",
      layers: [
        {
          input: pngBomb(20_000, 20_000),
          left: 0,
          top: 0,
          width: 5,
          height: 5,
          repeat: "no-repeat",
          opacity: 1,
        },
      ],
    };
    const error = await rejection(codec.transform({ input: base, steps: [step], output, limits }));
    expect(error.code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
    expect(error.message).toContain("Overlay 0");
  });

  it("refuses an overlay whose scaled size is over the pixel limit", async () => {
    const base = await solidImage(20, 20, Colors.white, "png");
    const red = await solidImage(4, 4, Colors.red, "png");
    const step: TransformStep = {
      type: "overlay",
      layers: [{ input: red, left: 0, top: 0, width: 2000, height: 2000, repeat: "no-repeat", opacity: 1 }],
    };
    const request = { input: base, steps: [step], output, limits: { maxInputPixels: 1_000_000 } };
    expect((await rejection(codec.transform(request))).code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
  });

  it("valid inputs jimp cannot decode reject with UNSUPPORTED_OPERATION and say why", async () => {
    const arithmetic = await rejection(
      codec.transform({ input: fakeJpeg(10, 10, 0xc9), steps: [], output, limits }),
    );
    expect(arithmetic.code).toBe(ErrorCodes.UNSUPPORTED_OPERATION);
    expect(arithmetic.message).toMatch(/jimp codec cannot decode this JPEG variant/);
    const animated = await rejection(
      codec.transform({ input: fakeWebp(10, 10, true), steps: [], output, limits }),
    );
    expect(animated.code).toBe(ErrorCodes.UNSUPPORTED_OPERATION);
    expect(animated.message).toMatch(/animated WebP/);
  });

  it("rejects truncated webp and a jpeg frame header without image data with INVALID_IMAGE", async () => {
    const webp = truncate(await noiseImage(64, 64, "webp"), 0.6);
    expect((await rejection(codec.transform({ input: webp, steps: [], output, limits }))).code).toBe(
      ErrorCodes.INVALID_IMAGE,
    );
    const empty = await rejection(codec.transform({ input: fakeJpeg(10, 10), steps: [], output, limits }));
    expect(empty.code).toBe(ErrorCodes.INVALID_IMAGE);
  });
});

describe("blur kernel", () => {
  it("matches libvips' Gaussian cut at 0.2 of its peak", () => {
    // sigma 1: taps at -1, 0, 1 (exp(-2) = 0.135 < 0.2 is cut), as measured on sharp.
    const kernel = gaussianKernel(1);
    expect(kernel.length).toBe(3);
    expect(kernel[1]! / kernel[0]!).toBeCloseTo(Math.exp(0.5), 6);
    expect(gaussianKernel(20).length).toBe(2 * 35 + 1);
  });

  it.each([4, 30, 250, 3000])(
    "three box passes reproduce a variance of %d within one box step",
    (variance) => {
      const widths = boxWidths(variance);
      expect(widths).toHaveLength(3);
      for (const width of widths) expect(width % 2).toBe(1);
      const achieved = widths.reduce((total, width) => total + (width * width - 1) / 12, 0);
      expect(Math.abs(achieved - variance)).toBeLessThanOrEqual((2 * Math.max(...widths) + 2) / 12);
    },
  );

  it("keeps a flat image flat at every sigma (edges extended, weights normalised)", async () => {
    const flat = await solidImage(40, 30, { r: 90, g: 140, b: 200, alpha: 1 }, "png");
    for (const sigma of [1, 4, 50]) {
      const result = await codec.transform({ input: flat, steps: [{ type: "blur", sigma }], output, limits });
      const image = await decodeRaw(result.data);
      for (const [x, y] of [
        [0, 0],
        [39, 29],
        [20, 15],
      ] as const) {
        expect(pixelAt(image, x, y)).toEqual({ r: 90, g: 140, b: 200, a: 255 });
      }
    }
  });
});
