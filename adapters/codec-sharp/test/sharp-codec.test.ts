import { createSharpCodec, sharpImageCodecOptionsSchema } from "@pixport/codec-sharp";
import {
  type DecodeLimits,
  ErrorCodes,
  IMAGE_FORMATS,
  type ImageCodec,
  isImagePipelineError,
  type TransformRequest,
} from "@pixport/core";
import {
  type OverlayLayer,
  rotatedSize,
  TRANSFORM_STEP_TYPES,
  type TransformStep,
} from "@pixport/core/adapter-kit";
import { Colors, decodeRaw, meanOf, orientedJpeg, pixelAt, solidImage } from "@pixport/testing";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { compositeEntries } from "../src/overlay.js";

const output = { format: "png", quality: 90, flattenBackground: Colors.black } as const;
const limits: DecodeLimits = { maxInputPixels: 50_000_000 };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describe("createSharpCodec options", () => {
  it("applies the documented defaults", () => {
    expect(sharpImageCodecOptionsSchema.parse({})).toEqual({
      maxInputPixels: 50_000_000,
      blockUntrustedLoaders: true,
      sourceCacheBytes: 64 * 1024 * 1024,
    });
  });

  it.each([
    [{ concurrency: -1 }, "concurrency"],
    [{ concurrency: 1.5 }, "concurrency"],
    [{ concurrency: "2" }, "concurrency"],
    [{ cache: { memory: -5 } }, "cache"],
    [{ cache: "yes" }, "cache"],
    [{ sourceCacheBytes: -1 }, "sourceCacheBytes"],
    [{ maxInputPixels: 0 }, "maxInputPixels"],
    [{ maxInputPixel: 10 }, "maxInputPixel"],
  ])("rejects %o with INVALID_CONFIGURATION naming %s", (options, path) => {
    let caught: unknown;
    try {
      createSharpCodec(options as never);
    } catch (error) {
      caught = error;
    }
    expect(isImagePipelineError(caught)).toBe(true);
    expect((caught as { code: string }).code).toBe(ErrorCodes.INVALID_CONFIGURATION);
    expect((caught as Error).message).toContain(path);
    expect((caught as Error).message).toContain("createSharpCodec");
  });

  it("sets sharp's process-wide concurrency and cache only when asked", () => {
    const concurrency = sharp.concurrency();
    try {
      createSharpCodec({ concurrency: 2, cache: { memory: 10, items: 7 } });
      expect(sharp.concurrency()).toBe(2);
      expect(sharp.cache().memory.max).toBe(10);
      expect(sharp.cache().items.max).toBe(7);
      createSharpCodec();
      expect(sharp.concurrency()).toBe(2);
    } finally {
      sharp.concurrency(concurrency);
      sharp.cache(true);
    }
  });

  it("declares jpeg, png and webp and every transform step", () => {
    const codec = createSharpCodec();
    expect(codec.name).toBe("sharp");
    expect([...codec.capabilities.inputFormats]).toEqual([...IMAGE_FORMATS]);
    expect([...codec.capabilities.outputFormats]).toEqual([...IMAGE_FORMATS]);
    expect([...codec.capabilities.steps].sort()).toEqual([...TRANSFORM_STEP_TYPES].sort());
  });
});

describe("sharp codec specifics", () => {
  let codec: ImageCodec;
  // libvips reads SVG (librsvg is in the prebuilt sharp), pixport never does.
  const svg = Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="red"/></svg>',
  );
  beforeAll(async () => {
    codec = createSharpCodec({ maxInputPixels: 1_000 });
  });

  const transform = (request: Partial<TransformRequest> & Pick<TransformRequest, "input">) =>
    codec.transform({ steps: [], output, limits, ...request });

  it("sample: a 16-bit alpha channel is read at 16 bits (65534 is not opaque, 65535 is)", async () => {
    const sampler = createSharpCodec();
    const png16 = (alphaOfOne: number) => {
      const width = 300;
      const height = 200;
      const pixels = new Uint16Array(width * height * 4).fill(65535);
      pixels[(150 * width + 200) * 4 + 3] = alphaOfOne;
      return sharp(pixels, { raw: { width, height, channels: 4 } })
        .toColourspace("rgb16")
        .png()
        .toBuffer();
    };
    const almost = await png16(65534);
    expect((await sharp(almost).metadata()).depth, "the fixture is 16-bit").toBe("ushort");
    expect((await sampler.sample!(almost, 32, limits)).hasAlpha).toBe(true);
    expect((await sampler.sample!(await png16(65535), 32, limits)).hasAlpha).toBe(false);
  });

  it("refuses non-Uint8Array inputs with a TypeError that names what it received", async () => {
    await expect(transform({ input: "/etc/passwd" as never })).rejects.toThrow(
      "Expected Uint8Array for input, received string",
    );
    await expect(codec.probe(new ArrayBuffer(8) as never)).rejects.toThrow(TypeError);
    await expect(transform({ input: null as never })).rejects.toThrow(TypeError);
  });

  it("reads HEIF coded with AV1 as avif", async () => {
    const heif = await sharp({ create: { width: 24, height: 16, channels: 3, background: "#00ff00" } })
      .heif({ compression: "av1", quality: 90 })
      .toBuffer();
    const big = createSharpCodec();
    expect(await big.probe(heif)).toEqual({ format: "avif", width: 24, height: 16 });
    const result = await big.transform({
      input: heif,
      steps: [],
      output: { format: "png", quality: 90, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
      limits: { maxInputPixels: 10_000 },
    });
    const { data } = await sharp(result.data).raw().toBuffer({ resolveWithObject: true });
    expect(data[1]).toBeGreaterThan(200);
    expect(data[0]).toBeLessThan(40);
  });

  it("keeps other libvips loaders away: SVG is neither probed nor decoded", async () => {
    expect(await codec.probe(svg)).toBeNull();
    const error = await rejection(transform({ input: svg }));
    expect((error as { code: string }).code).toBe(ErrorCodes.INVALID_IMAGE);
    // Defence in depth: even called directly, sharp refuses the blocked loader.
    await expect(sharp(svg).metadata()).rejects.toThrow();
  });

  it("translates decoder failures to INVALID_IMAGE and keeps sharp's error as cause", async () => {
    const jpeg = await solidImage(64, 64, Colors.grey, "jpeg");
    const error = await rejection(transform({ input: jpeg.slice(0, jpeg.length - 40) }));
    expect(isImagePipelineError(error)).toBe(true);
    expect((error as { code: string }).code).toBe(ErrorCodes.INVALID_IMAGE);
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(((error as Error).cause as Error).message).toMatch(/jpeg/i);
  });

  it("translates sharp's pixel limit to IMAGE_TOO_LARGE with the cause", async () => {
    const input = await solidImage(40, 40, Colors.grey);
    const error = await rejection(transform({ input, limits: { maxInputPixels: 1_000 } }));
    expect((error as { code: string }).code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
    expect(((error as Error).cause as Error).message).toMatch(/pixel limit/);
  });

  it("uses options.maxInputPixels only when the request carries no limit", async () => {
    const input = await solidImage(40, 40, Colors.grey);
    const fallback = await rejection(transform({ input, limits: {} as DecodeLimits }));
    expect((fallback as { code: string }).code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
    const allowed = await transform({ input, limits: { maxInputPixels: 1_600 } });
    expect(allowed.width).toBe(40);
  });

  it("applies the pixel limit to overlay inputs too", async () => {
    const base = await solidImage(20, 20, Colors.white);
    const big = await solidImage(60, 60, Colors.red);
    const step: TransformStep = {
      type: "overlay",
      layers: [{ input: big, left: 0, top: 0, width: 5, height: 5, repeat: "no-repeat", opacity: 1 }],
    };
    const error = await rejection(
      transform({ input: base, steps: [step], limits: { maxInputPixels: 1_000 } }),
    );
    expect((error as { code: string }).code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
  });

  it("downscales a large JPEG as the first step (shrink-on-load path) to the exact size", async () => {
    const jpeg = await sharp({ create: { width: 1600, height: 1200, channels: 3, background: "#ff0000" } })
      .jpeg()
      .toBuffer();
    const result = await transform({
      input: jpeg,
      steps: [
        { type: "resize", width: 101, height: 77, fit: "fill", position: "center", background: Colors.black },
      ],
      output: { ...output, format: "jpeg" },
    });
    expect([result.width, result.height]).toEqual([101, 77]);
    const mean = meanOf(await decodeRaw(result.data));
    expect(mean.r).toBeGreaterThan(230);
    expect(mean.g).toBeLessThan(25);
  });

  it("shrinks an EXIF-rotated JPEG on load to the upright box", async () => {
    const input = await orientedJpeg(800, 400);
    const result = await transform({
      input,
      steps: [
        { type: "resize", width: 40, height: 80, fit: "fill", position: "center", background: Colors.black },
      ],
    });
    expect([result.width, result.height]).toEqual([40, 80]);
    const image = await decodeRaw(result.data);
    expect(pixelAt(image, 20, 10).r).toBeGreaterThan(200);
    expect(pixelAt(image, 20, 70).b).toBeGreaterThan(200);
  });

  it("tiles a 1 x 1 overlay over a large image with one composite entry per layer, not one per tile", async () => {
    const base = await sharp({ create: { width: 2000, height: 1500, channels: 3, background: "#ffffff" } })
      .png({ compressionLevel: 1 })
      .toBuffer();
    const dot = await solidImage(1, 1, Colors.red);
    const layers: OverlayLayer[] = [
      { input: dot, left: 0, top: 0, width: 1, height: 1, repeat: "repeat", opacity: 1 },
      { input: dot, left: 5, top: 7, width: 1, height: 3, repeat: "repeat-x", opacity: 1 },
    ];
    // One composite entry per layer whatever the tile count: libvips' cost grows with the entries.
    const entries = await compositeEntries(layers, { width: 2000, height: 1500 }, {});
    expect(entries).toHaveLength(2);
    const result = await transform({
      input: base,
      steps: [{ type: "overlay", layers }],
      output: { ...output, format: "jpeg" },
    });
    const image = await decodeRaw(result.data);
    expect(meanOf(image, { x: 1900, y: 1400, width: 50, height: 50 }).r).toBeGreaterThan(230);
    expect(meanOf(image, { x: 1900, y: 1400, width: 50, height: 50 }).g).toBeLessThan(25);
  });

  it("runs every step on greyscale and 16-bit inputs", async () => {
    const grey = await sharp({ create: { width: 30, height: 20, channels: 3, background: "#808080" } })
      .toColourspace("b-w")
      .png()
      .toBuffer();
    const deep = await sharp({ create: { width: 30, height: 20, channels: 4, background: "#80808080" } })
      .toColourspace("rgb16")
      .png()
      .toBuffer();
    expect((await sharp(grey).metadata()).channels).toBe(1);
    expect((await sharp(deep).metadata()).depth).toBe("ushort");
    const overlay = await solidImage(4, 4, Colors.red);
    const steps: TransformStep[] = [
      { type: "modulate", brightness: 10, saturation: 10, exposure: 10, contrast: 10, lightness: 5, hue: 30 },
      { type: "rotate", angle: 30, background: Colors.transparent },
      { type: "blur", sigma: 1 },
      { type: "mirror", mode: "both" },
      {
        type: "overlay",
        layers: [{ input: overlay, left: -2, top: 3, width: 4, height: 4, repeat: "repeat-y", opacity: 0.5 }],
      },
      {
        type: "resize",
        width: 25,
        height: 25,
        fit: "contain",
        position: "top-left",
        background: Colors.green,
      },
      { type: "crop", left: 1, top: 1, width: 20, height: 20 },
    ];
    for (const input of [grey, deep]) {
      for (const format of ["png", "jpeg", "webp"] as const) {
        const result = await transform({ input, steps, output: { ...output, format } });
        expect([result.width, result.height]).toEqual([20, 20]);
      }
    }
    const rotated = await transform({
      input: grey,
      steps: [{ type: "rotate", angle: 30, background: Colors.red }],
    });
    expect({ width: rotated.width, height: rotated.height }).toEqual(
      rotatedSize({ width: 30, height: 20 }, 30),
    );
  });

  it("reads webp and png with alpha under failOn: warning", async () => {
    for (const format of ["png", "webp", "jpeg"] as const) {
      const input = await solidImage(16, 16, { r: 10, g: 200, b: 30, alpha: 0.5 }, format);
      const result = await transform({ input, output: { ...output, format } });
      expect(result.width).toBe(16);
    }
  });
});

describe("large-sigma blur on a reduced copy (core blurSteps)", () => {
  /** A picture with a gradient and hard-edged shapes (raw pixels: the codec blocks SVG input). */
  async function picture(width: number, height: number): Promise<Uint8Array> {
    const raw = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const inCircle = (x - width / 4) ** 2 + (y - height / 2) ** 2 < (height / 5) ** 2;
        const inBox = x > width * 0.6 && x < width * 0.85 && y > height / 8 && y < (height * 7) / 8;
        const pixel = inCircle
          ? [255, 255, 0]
          : inBox
            ? [0, 255, 0]
            : [(255 * (width - x)) / width, 0, (255 * x) / width];
        raw.set(pixel, (y * width + x) * 3);
      }
    }
    return new Uint8Array(
      await sharp(raw, { raw: { width, height, channels: 3 } })
        .png()
        .toBuffer(),
    );
  }
  function psnr(a: Uint8Array, b: Uint8Array): number {
    let squared = 0;
    for (let index = 0; index < a.length; index++) squared += (a[index]! - b[index]!) ** 2;
    return 10 * Math.log10((255 * 255) / (squared / a.length));
  }

  it.each([
    // Measured: 45.0, 47.1 and 53.5 dB.
    [100, 44],
    [400, 44],
    [1000, 44],
  ])(
    "sigma %i is within %i dB PSNR of sharp's direct blur",
    async (sigma, minimum) => {
      const { blurSteps } = await import("@pixport/core/internal");
      const size = { width: 300, height: 200 };
      const input = await picture(size.width, size.height);
      const codec = createSharpCodec();
      const fast = await codec.transform({ input, steps: blurSteps(sigma, size), output, limits });
      expect([fast.width, fast.height]).toEqual([300, 200]);
      const ours = await sharp(fast.data).removeAlpha().raw().toBuffer();
      const direct = await sharp(input).blur(sigma).removeAlpha().raw().toBuffer();
      expect(psnr(ours, direct)).toBeGreaterThan(minimum);
    },
    60_000,
  );
});
