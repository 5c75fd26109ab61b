import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type {
  EncodedImage,
  ImageCodec,
  ImageFormat,
  ModulateStep,
  OutputOptions,
  OverlayLayer,
  Rgba,
  TransformStep,
  TransformStepType,
} from "@pixport/core";
import {
  ErrorCodes,
  isImagePipelineError,
  rotatedSize,
  sniffImageFormat,
  TRANSFORM_STEP_TYPES,
} from "@pixport/core";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import {
  Colors,
  colorDistance,
  DEFAULT_QUADRANTS,
  decodeRaw,
  describeEncoded,
  edgeContrast,
  GARBAGE_BYTES,
  HEIC_HEVC_BYTES,
  halvesImage,
  hue,
  hueDistance,
  luminanceStats,
  meanOf,
  meanSaturation,
  noiseImage,
  orientedJpeg,
  pixelAt,
  pngBomb,
  type Quadrants,
  quadrantsImage,
  type RawImage,
  SVG_BYTES,
  solidImage,
  topBottomImage,
  truncate,
} from "../fixtures/images.js";
import { describeImageCodecFormats } from "./image-codec-formats.js";

/** Named groups of the suite; each can be skipped with a reason. */
export type ImageCodecSuiteGroup =
  | "probe"
  | "encode"
  | "mirror"
  | "crop"
  | "rotate"
  | "resize"
  | "blur"
  | "modulate"
  | "overlay"
  | "errors"
  | "bombs";

/** Options of {@link describeImageCodecConformance}. */
export interface ImageCodecConformanceOptions {
  /** Shown in the suite title. */
  name: string;
  /** Builds the codec under test (once per suite). */
  create: () => ImageCodec | Promise<ImageCodec>;
  /**
   * Documented gaps: a group mapped to the reason it is skipped (the reason is the skip note).
   * Steps missing from `codec.capabilities.steps` are skipped automatically.
   */
  skip?: Partial<Record<ImageCodecSuiteGroup, string>>;
  /** Registers adapter-specific tests inside the suite; `codec()` returns the created codec. */
  extraTests?: (codec: () => ImageCodec) => void;
}

const DEFAULT_LIMITS = { maxInputPixels: 50_000_000 };

/** Per-channel tolerance for lossless (png) results; resampling may still move edges by one level. */
const EXACT = 6;
/** Per-channel tolerance for lossy encoders on flat colour areas. */
const LOSSY = 40;

/**
 * The ImageCodec conformance suite: behavioural, pixel-level checks of the port's semantics on tiny
 * generated images (see `fixtures/images.ts`). Results are decoded and measured (colours at known
 * positions, dimensions, magic bytes, statistics); encoded bytes are never compared.
 *
 * @example
 * ```ts
 * describeImageCodecConformance({ name: "sharp", create: () => createSharpCodec() });
 * ```
 */
export function describeImageCodecConformance(options: ImageCodecConformanceOptions): void {
  describe(`ImageCodec conformance: ${options.name}`, () => {
    let codec: ImageCodec;
    beforeAll(async () => {
      codec = await options.create();
    });

    /** Registers a test of `group`, skipped with its documented reason, or when a step is missing. */
    const check = (
      group: ImageCodecSuiteGroup,
      title: string,
      body: () => Promise<void>,
      steps: TransformStepType[] = [],
    ) =>
      it(title, async (context: TestContext) => {
        const reason = options.skip?.[group];
        if (reason !== undefined) context.skip(reason);
        const missing = steps.filter((step) => !codec.capabilities.steps.includes(step));
        if (missing.length > 0) context.skip(`the codec does not declare the ${missing.join(", ")} step`);
        await body();
      });

    const run = async (
      input: Uint8Array,
      steps: TransformStep[],
      output: Partial<OutputOptions> = {},
      limits = DEFAULT_LIMITS,
    ): Promise<{ encoded: EncodedImage; image: RawImage }> => {
      const format = output.format ?? sniffImageFormat(input) ?? "png";
      const encoded = await codec.transform({
        input,
        steps,
        output: {
          format,
          quality: output.quality ?? 90,
          flattenBackground: output.flattenBackground ?? Colors.black,
        },
        limits,
      });
      expect(encoded.format).toBe(format);
      expect(sniffImageFormat(encoded.data), "magic bytes of the output").toBe(format);
      const image = await decodeRaw(encoded.data);
      expect({ width: image.width, height: image.height }, "reported size matches the encoded size").toEqual({
        width: encoded.width,
        height: encoded.height,
      });
      return { encoded, image };
    };

    const expectColor = (image: RawImage, x: number, y: number, color: Rgba, tolerance = EXACT) => {
      const pixel = pixelAt(image, x, y);
      expect(
        colorDistance(pixel, color),
        `pixel (${x}, ${y}) is ${JSON.stringify(pixel)}, expected ${JSON.stringify(color)}`,
      ).toBeLessThanOrEqual(tolerance);
    };

    const expectRejection = async (promise: Promise<unknown>, code: string) => {
      const error = await promise.then(
        () => {
          throw new Error(`expected a rejection with ${code}, but the call succeeded`);
        },
        (caught: unknown) => caught,
      );
      expect(isImagePipelineError(error), `expected an ImagePipelineError, received ${String(error)}`).toBe(
        true,
      );
      expect((error as { code: string }).code).toBe(code);
    };

    describe("probe", () => {
      for (const format of ["jpeg", "png", "webp"] as const) {
        check("probe", `reads the format and size of a ${format} header`, async () => {
          const input = await solidImage(30, 20, Colors.grey, format);
          expect(await codec.probe(input)).toEqual({ format, width: 30, height: 20 });
        });
      }

      check("probe", "returns null for SVG, GIF, garbage and empty input", async () => {
        for (const input of [SVG_BYTES, GARBAGE_BYTES, HEIC_HEVC_BYTES, new Uint8Array(0)]) {
          expect(await codec.probe(input)).toBeNull();
        }
      });

      check("probe", "reports dimensions after EXIF orientation (orientation 6 is portrait)", async () => {
        expect(await codec.probe(await orientedJpeg(40, 20))).toEqual({
          format: "jpeg",
          width: 20,
          height: 40,
        });
      });

      check("probe", "accepts a plain Uint8Array view at a non-zero offset", async () => {
        const bytes = await solidImage(12, 7, Colors.red, "png");
        const backing = new Uint8Array(bytes.length + 9).fill(0xab);
        backing.set(bytes, 9);
        expect(await codec.probe(backing.subarray(9))).toEqual({ format: "png", width: 12, height: 7 });
      });
    });

    describe("encode", () => {
      for (const format of ["jpeg", "png", "webp"] as const) {
        check("encode", `re-encodes ${format} with no steps, keeping size and pixels`, async () => {
          const input = await halvesImage(40, 20, Colors.red, Colors.blue, format);
          const { image } = await run(input, []);
          expect([image.width, image.height]).toEqual([40, 20]);
          const tolerance = format === "png" ? EXACT : LOSSY;
          expectColor(image, 5, 10, Colors.red, tolerance);
          expectColor(image, 34, 10, Colors.blue, tolerance);
        });
      }

      check("encode", "applies EXIF orientation and strips EXIF", async () => {
        for (const format of ["jpeg", "png"] as const) {
          const { encoded, image } = await run(await orientedJpeg(40, 20), [], { format });
          expect([image.width, image.height]).toEqual([20, 40]);
          expectColor(image, 10, 5, Colors.red, LOSSY);
          expectColor(image, 10, 34, Colors.blue, LOSSY);
          const described = await describeEncoded(encoded.data);
          expect(described.hasExif, `EXIF left in the ${format} output`).toBe(false);
          expect(described.orientation).toBeUndefined();
        }
      });

      check("encode", "converts to every output format (magic bytes and pixels)", async () => {
        for (const from of ["jpeg", "png", "webp"] as const) {
          const input = await halvesImage(16, 8, Colors.red, Colors.blue, from);
          for (const to of ["jpeg", "png", "webp"] as const) {
            const { encoded, image } = await run(input, [], { format: to });
            expect([encoded.width, encoded.height]).toEqual([16, 8]);
            expectColor(image, 2, 4, Colors.red, LOSSY);
            expectColor(image, 13, 4, Colors.blue, LOSSY);
          }
        }
      });

      for (const format of ["jpeg", "webp"] as const) {
        check("encode", `a lower ${format} quality gives a smaller file`, async () => {
          const input = await noiseImage(64, 64, "png");
          const high = await run(input, [], { format, quality: 95 });
          const low = await run(input, [], { format, quality: 20 });
          expect(low.encoded.data.byteLength).toBeLessThan(high.encoded.data.byteLength);
        });
      }

      check("encode", "png stays lossless whatever the quality", async () => {
        const input = await noiseImage(24, 24, "png");
        const original = await decodeRaw(input);
        const { image } = await run(input, [], { format: "png", quality: 1 });
        expect(Buffer.from(image.data).equals(Buffer.from(original.data)), "decoded pixels differ").toBe(
          true,
        );
      });

      check(
        "encode",
        "flattens transparency onto flattenBackground for jpeg (black by default)",
        async () => {
          const input = await halvesImage(20, 20, Colors.transparent, Colors.white, "png");
          const black = await run(input, [], { format: "jpeg" });
          expectColor(black.image, 3, 10, Colors.black, LOSSY);
          expectColor(black.image, 16, 10, Colors.white, LOSSY);
          const white = await run(input, [], { format: "jpeg", flattenBackground: Colors.white });
          expectColor(white.image, 3, 10, Colors.white, LOSSY);
        },
      );

      check(
        "encode",
        "for jpeg output, also flattens transparency that steps create (a transparent letterbox)",
        async () => {
          const input = await halvesImage(40, 20, Colors.red, Colors.blue, "jpeg");
          const step: TransformStep = {
            type: "resize",
            width: 40,
            height: 40,
            fit: "contain",
            position: "center",
            background: Colors.transparent,
          };
          const { image } = await run(input, [step], { format: "jpeg", flattenBackground: Colors.white });
          expectColor(image, 20, 3, Colors.white, LOSSY);
          expectColor(image, 5, 20, Colors.red, LOSSY);
        },
        ["resize"],
      );

      check("encode", "keeps transparency in png and webp", async () => {
        const input = await halvesImage(20, 20, Colors.transparent, Colors.red, "png");
        for (const format of ["png", "webp"] as const) {
          const { image } = await run(input, [], { format });
          expect(pixelAt(image, 3, 10).a, `${format} alpha`).toBeLessThanOrEqual(5);
          expect(pixelAt(image, 16, 10).a, `${format} alpha`).toBeGreaterThanOrEqual(250);
        }
      });
    });

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

    describe("rotate", () => {
      const quadrants = () => quadrantsImage(60, 40);
      const rotate = (angle: number, background: Rgba = Colors.black): TransformStep => ({
        type: "rotate",
        angle,
        background,
      });

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
    });

    describe("resize", () => {
      const resize = (
        width: number,
        height: number,
        fit: "fill" | "contain" | "cover",
        position: (TransformStep & { type: "resize" })["position"] = "center",
        background: Rgba = Colors.green,
      ): TransformStep => ({ type: "resize", width, height, fit, position, background });

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
    });

    describe("blur", () => {
      check(
        "blur",
        "lowers edge contrast, more with a larger sigma, keeping size and mean",
        async () => {
          const input = await halvesImage(40, 20, Colors.black, Colors.white);
          const original = await decodeRaw(input);
          const light = await run(input, [{ type: "blur", sigma: 1 }]);
          const heavy = await run(input, [{ type: "blur", sigma: 5 }]);
          expect([heavy.image.width, heavy.image.height]).toEqual([40, 20]);
          const before = edgeContrast(original);
          expect(before).toBeGreaterThan(200);
          expect(edgeContrast(light.image)).toBeLessThan(before * 0.8);
          expect(edgeContrast(heavy.image)).toBeLessThan(edgeContrast(light.image));
          expect(Math.abs(luminanceStats(heavy.image).mean - luminanceStats(original).mean)).toBeLessThan(12);
        },
        ["blur"],
      );
    });

    describe("modulate", () => {
      const modulate = (fields: Partial<Omit<ModulateStep, "type">>): TransformStep => ({
        type: "modulate",
        brightness: 0,
        saturation: 0,
        exposure: 0,
        contrast: 0,
        lightness: 0,
        hue: 0,
        ...fields,
      });
      const patch = (color: Rgba) => solidImage(16, 16, color, "png");
      const muted = { r: 150, g: 100, b: 90, alpha: 1 };

      check(
        "modulate",
        "all fields 0 leaves the pixels unchanged",
        async () => {
          const { image } = await run(await patch(muted), [modulate({})]);
          expectColor(image, 8, 8, muted, 3);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "brightness moves mean luminance up and down",
        async () => {
          const input = await patch(muted);
          const base = luminanceStats(await decodeRaw(input)).mean;
          const up = luminanceStats((await run(input, [modulate({ brightness: 50 })])).image).mean;
          const down = luminanceStats((await run(input, [modulate({ brightness: -50 })])).image).mean;
          expect(up).toBeGreaterThan(base + 10);
          expect(down).toBeLessThan(base - 10);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "saturation moves mean saturation up and down",
        async () => {
          const input = await patch(muted);
          const base = meanSaturation(await decodeRaw(input));
          const up = meanSaturation((await run(input, [modulate({ saturation: 50 })])).image);
          const down = meanSaturation((await run(input, [modulate({ saturation: -50 })])).image);
          expect(up).toBeGreaterThan(base + 0.05);
          expect(down).toBeLessThan(base - 0.05);
          const grey = meanSaturation((await run(input, [modulate({ saturation: -100 })])).image);
          expect(grey).toBeLessThan(0.05);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "hue rotates a red patch's hue, in opposite directions for opposite signs",
        async () => {
          const red = { r: 200, g: 40, b: 40, alpha: 1 };
          const input = await patch(red);
          const forward = hue(meanOf((await run(input, [modulate({ hue: 120 })])).image));
          const backward = hue(meanOf((await run(input, [modulate({ hue: -120 })])).image));
          expect(hueDistance(forward, hue(red))).toBeGreaterThan(60);
          expect(hueDistance(backward, hue(red))).toBeGreaterThan(60);
          expect(hueDistance(forward, backward)).toBeGreaterThan(60);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "lightness adds to luminance",
        async () => {
          const input = await patch(muted);
          const base = luminanceStats(await decodeRaw(input)).mean;
          const up = luminanceStats((await run(input, [modulate({ lightness: 20 })])).image).mean;
          const down = luminanceStats((await run(input, [modulate({ lightness: -20 })])).image).mean;
          expect(up).toBeGreaterThan(base + 10);
          expect(down).toBeLessThan(base - 10);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "exposure is a linear gain of 1 + v/100 on RGB",
        async () => {
          const input = await patch({ r: 100, g: 80, b: 60, alpha: 1 });
          const up = meanOf((await run(input, [modulate({ exposure: 50 })])).image);
          expect(up.r).toBeGreaterThan(150 - 12);
          expect(up.r).toBeLessThan(150 + 12);
          expect(up.b).toBeGreaterThan(90 - 12);
          expect(up.b).toBeLessThan(90 + 12);
          const down = meanOf((await run(input, [modulate({ exposure: -50 })])).image);
          expect(down.r).toBeGreaterThan(50 - 12);
          expect(down.r).toBeLessThan(50 + 12);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "contrast moves the spread of luminance around mid-grey",
        async () => {
          const dark = { r: 100, g: 100, b: 100, alpha: 1 };
          const light = { r: 156, g: 156, b: 156, alpha: 1 };
          const input = await halvesImage(16, 16, dark, light, "png");
          const base = luminanceStats(await decodeRaw(input));
          const up = luminanceStats((await run(input, [modulate({ contrast: 50 })])).image);
          const down = luminanceStats((await run(input, [modulate({ contrast: -50 })])).image);
          expect(up.stddev).toBeGreaterThan(base.stddev * 1.3);
          expect(down.stddev).toBeLessThan(base.stddev * 0.7);
          expect(Math.abs(up.mean - base.mean)).toBeLessThan(8);
        },
        ["modulate"],
      );

      check(
        "modulate",
        "leaves alpha untouched",
        async () => {
          const input = await patch({ ...muted, alpha: 0.5 });
          const { image } = await run(input, [
            modulate({ brightness: 50, contrast: 30, exposure: 20, hue: 90 }),
          ]);
          expect(Math.abs(meanOf(image).a - 128)).toBeLessThanOrEqual(2);
        },
        ["modulate"],
      );
    });

    describe("overlay", () => {
      let base: Uint8Array;
      let red: Uint8Array;
      let tile: Uint8Array;
      beforeAll(async () => {
        base = await solidImage(100, 100, Colors.white, "png");
        red = await solidImage(10, 10, Colors.red, "png");
        tile = await quadrantsImage(10, 10);
      });
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

      check(
        "overlay",
        "draws at left/top with the requested width and height",
        async () => {
          const { image } = await run(
            base,
            overlay(layer(red, { left: 20, top: 30, width: 15, height: 10 })),
          );
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
            overlay(
              layer(tile, { left: -5, top: -5 }),
              layer(red, { left: 95, top: 96, width: 10, height: 10 }),
            ),
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

      check(
        "overlay",
        "an overlay larger than the base is clipped; one fully outside changes nothing",
        async () => {
          const covered = await run(
            base,
            overlay(layer(red, { left: -50, top: -50, width: 300, height: 300 })),
          );
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
          const { image } = await run(
            base,
            overlay(layer(tile, { left: 20, top: 20, width: 150, height: 150 })),
          );
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
    });

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

    describe("sourceKey", () => {
      check(
        "encode",
        "a sourceKey changes nothing the caller sees: each of several uses runs its own steps on the source",
        async () => {
          // The same bytes under one key, used again and again with different steps and outputs (a
          // codec may keep the decoded source from one use to the next), and an EXIF-rotated JPEG
          // under another key: every answer is what the same request without a key gives.
          const quadrants = await quadrantsImage(80, 40);
          const key = `conformance-${Math.random().toString(36).slice(2)}`;
          const keyed = async (
            input: Uint8Array,
            sourceKey: string,
            steps: TransformStep[],
            format: ImageFormat,
          ) => {
            const encoded = await codec.transform({
              input,
              steps,
              output: { format, quality: 90, flattenBackground: Colors.black },
              limits: DEFAULT_LIMITS,
              sourceKey,
            });
            return decodeRaw(encoded.data);
          };
          for (let use = 0; use < 3; use += 1) {
            const whole = await keyed(quadrants, key, [], "png");
            expect([whole.width, whole.height]).toEqual([80, 40]);
            expectColor(whole, 10, 10, DEFAULT_QUADRANTS.topLeft);
            expectColor(whole, 70, 30, DEFAULT_QUADRANTS.bottomRight);
            if (codec.capabilities.steps.includes("mirror")) {
              const mirrored = await keyed(quadrants, key, [{ type: "mirror", mode: "horizontal" }], "png");
              expectColor(mirrored, 10, 10, DEFAULT_QUADRANTS.topRight);
              expectColor(mirrored, 70, 30, DEFAULT_QUADRANTS.bottomLeft);
            }
            if (codec.capabilities.steps.includes("crop")) {
              const cropped = await keyed(
                quadrants,
                key,
                [{ type: "crop", left: 40, top: 20, width: 40, height: 20 }],
                "jpeg",
              );
              expect([cropped.width, cropped.height]).toEqual([40, 20]);
              expectColor(cropped, 20, 10, DEFAULT_QUADRANTS.bottomRight, LOSSY);
            }
          }
          const rotatedKey = `${key}-oriented`;
          const oriented = await orientedJpeg();
          const plain = await decodeRaw(
            (
              await codec.transform({
                input: oriented,
                steps: [],
                output: { format: "png", quality: 90, flattenBackground: Colors.black },
                limits: DEFAULT_LIMITS,
              })
            ).data,
          );
          for (let use = 0; use < 3; use += 1) {
            const image = await keyed(oriented, rotatedKey, [], "png");
            expect([image.width, image.height]).toEqual([plain.width, plain.height]);
            const asColor = ({ r, g, b, a }: ReturnType<typeof pixelAt>): Rgba => ({
              r,
              g,
              b,
              alpha: a / 255,
            });
            expectColor(image, 1, 1, asColor(pixelAt(plain, 1, 1)), LOSSY);
            expectColor(
              image,
              plain.width - 2,
              plain.height - 2,
              asColor(pixelAt(plain, plain.width - 2, plain.height - 2)),
              LOSSY,
            );
          }
        },
      );
    });

    describe("errors", () => {
      check("errors", "truncated jpeg and png reject with INVALID_IMAGE", async () => {
        for (const format of ["jpeg", "png"] as const) {
          const input = truncate(await noiseImage(64, 64, format), 0.6);
          await expectRejection(run(input, []), ErrorCodes.INVALID_IMAGE);
        }
      });

      check("errors", "empty, garbage, SVG and HEVC-coded HEIC input reject with INVALID_IMAGE", async () => {
        for (const input of [new Uint8Array(0), GARBAGE_BYTES, SVG_BYTES, HEIC_HEVC_BYTES]) {
          await expectRejection(run(input, [], { format: "png" }), ErrorCodes.INVALID_IMAGE);
        }
      });

      check("errors", "a corrupt overlay rejects with INVALID_IMAGE", async () => {
        const base = await solidImage(20, 20, Colors.white, "png");
        const corrupt = truncate(await noiseImage(32, 32, "png"), 0.5);
        const step: TransformStep = {
          type: "overlay",
          layers: [
            { input: corrupt, left: 0, top: 0, width: 10, height: 10, repeat: "no-repeat", opacity: 1 },
          ],
        };
        await expectRejection(run(base, [step]), ErrorCodes.INVALID_IMAGE);
      });

      check("errors", "input over limits.maxInputPixels rejects with IMAGE_TOO_LARGE", async () => {
        const input = await solidImage(1200, 1000, Colors.grey, "png");
        await expectRejection(run(input, [], {}, { maxInputPixels: 1_000_000 }), ErrorCodes.IMAGE_TOO_LARGE);
        const { encoded } = await run(input, [], {}, { maxInputPixels: 1_200_000 });
        expect(encoded.width).toBe(1200);
      });

      check("errors", "a string input throws and is never read as a path", async () => {
        const directory = await mkdtemp(join(tmpdir(), "pixport-codec-"));
        try {
          const path = join(directory, "real.png");
          await writeFile(path, await solidImage(8, 8, Colors.red, "png"));
          const input = path as unknown as Uint8Array;
          await expect(codec.probe(input)).rejects.toThrow(TypeError);
          await expect(
            codec.transform({
              input,
              steps: [],
              output: { format: "png", quality: 90, flattenBackground: Colors.black },
              limits: DEFAULT_LIMITS,
            }),
          ).rejects.toThrow(TypeError);
        } finally {
          await rm(directory, { recursive: true, force: true });
        }
      });

      check(
        "errors",
        "a step or output format outside the capabilities rejects with UNSUPPORTED_OPERATION",
        async () => {
          const input = await solidImage(8, 8, Colors.red, "png");
          const unknownStep = { type: "sepia" } as unknown as TransformStep;
          await expectRejection(
            run(input, [unknownStep], { format: "png" }),
            ErrorCodes.UNSUPPORTED_OPERATION,
          );
          await expectRejection(
            codec.transform({
              input,
              steps: [],
              output: { format: "bmp" as ImageFormat, quality: 90, flattenBackground: Colors.black },
              limits: DEFAULT_LIMITS,
            }),
            ErrorCodes.UNSUPPORTED_OPERATION,
          );
          // A real step the codec does not declare is refused too (nothing to check for full codecs).
          for (const type of TRANSFORM_STEP_TYPES.filter(
            (step) => !codec.capabilities.steps.includes(step),
          )) {
            const step = { type: "blur", sigma: 1 } as const;
            await expectRejection(
              run(input, [{ ...step, type } as unknown as TransformStep], { format: "png" }),
              ErrorCodes.UNSUPPORTED_OPERATION,
            );
          }
        },
      );
    });

    describe("decompression bombs", () => {
      let bomb: Uint8Array;
      let underDefaultCap: Uint8Array;
      beforeAll(() => {
        bomb = pngBomb(20_000, 20_000);
        underDefaultCap = pngBomb(16_000, 16_000);
      });
      afterAll(() => {
        bomb = new Uint8Array(0);
        underDefaultCap = new Uint8Array(0);
      });

      check("bombs", "probe reports a 20000 x 20000 PNG quickly without decoding it", async () => {
        const rssBefore = process.memoryUsage().rss;
        const started = performance.now();
        const header = await codec.probe(bomb);
        const elapsed = performance.now() - started;
        expect(header).toEqual({ format: "png", width: 20_000, height: 20_000 });
        expect(elapsed, "probe time in ms").toBeLessThan(1000);
        expect(process.memoryUsage().rss - rssBefore, "RSS growth in bytes").toBeLessThan(50 * 1024 * 1024);
      });

      check("bombs", "transform refuses the bombs with IMAGE_TOO_LARGE without decoding them", async () => {
        const rssBefore = process.memoryUsage().rss;
        const started = performance.now();
        await expectRejection(
          run(bomb, [{ type: "blur", sigma: 1 }], {}, { maxInputPixels: 50_000_000 }),
          ErrorCodes.IMAGE_TOO_LARGE,
        );
        // 256 megapixels is under sharp's own default cap: the request's limit must be the one used.
        await expectRejection(
          run(underDefaultCap, [], {}, { maxInputPixels: 50_000_000 }),
          ErrorCodes.IMAGE_TOO_LARGE,
        );
        expect(performance.now() - started, "time in ms").toBeLessThan(2000);
        expect(process.memoryUsage().rss - rssBefore, "RSS growth in bytes").toBeLessThan(50 * 1024 * 1024);
      });
    });

    describeImageCodecFormats(options.name, () => codec);
    options.extraTests?.(() => codec);
  });
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
