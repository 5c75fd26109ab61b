import type { EncodedImage, ImageCodec } from "@pixport/core";
import { isImagePipelineError, sniffImageFormat } from "@pixport/core";
import type { OutputOptions, Rgba, TransformStep, TransformStepType } from "@pixport/core/adapter-kit";
import { beforeAll, expect, it, type TestContext } from "vitest";
import { Colors, colorDistance, decodeRaw, pixelAt, type RawImage } from "../fixtures/images.js";

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

export const DEFAULT_LIMITS = { maxInputPixels: 50_000_000 };

/** Per-channel tolerance for lossless (png) results; resampling may still move edges by one level. */
export const EXACT = 6;
/** Per-channel tolerance for lossy encoders on flat colour areas. */
export const LOSSY = 40;

/** What every group of the suite registers its tests with. */
export interface CodecHarness {
  /** The codec under test (created before the suite's first test). */
  readonly codec: ImageCodec;
  /** Registers a test of `group`, skipped with its documented reason, or when a step is missing. */
  check(
    group: ImageCodecSuiteGroup,
    title: string,
    body: () => Promise<void>,
    steps?: TransformStepType[],
  ): void;
  /**
   * Transforms `input` (output format: `output.format`, else the input's), checks the output's
   * magic bytes and reported size against the encoded image, and decodes it.
   */
  run(
    input: Uint8Array,
    steps: TransformStep[],
    output?: Partial<OutputOptions>,
    limits?: typeof DEFAULT_LIMITS,
  ): Promise<{ encoded: EncodedImage; image: RawImage }>;
  /** Expects the pixel at (x, y) within `tolerance` of `color`. */
  expectColor(image: RawImage, x: number, y: number, color: Rgba, tolerance?: number): void;
  /** Expects `promise` to reject with a pixport error of `code`. */
  expectRejection(promise: Promise<unknown>, code: string): Promise<void>;
}

/** The harness of one suite run; call inside its `describe` (it creates the codec in `beforeAll`). */
export function createCodecHarness(options: ImageCodecConformanceOptions): CodecHarness {
  let codec: ImageCodec | undefined;
  beforeAll(async () => {
    codec = await options.create();
  });
  const current = (): ImageCodec => {
    if (codec === undefined) throw new Error("The codec exists only while the suite runs.");
    return codec;
  };

  const check: CodecHarness["check"] = (group, title, body, steps = []) =>
    it(title, async (context: TestContext) => {
      const reason = options.skip?.[group];
      if (reason !== undefined) context.skip(reason);
      const missing = steps.filter((step) => !current().capabilities.steps.includes(step));
      if (missing.length > 0) context.skip(`the codec does not declare the ${missing.join(", ")} step`);
      await body();
    });

  const run: CodecHarness["run"] = async (input, steps, output = {}, limits = DEFAULT_LIMITS) => {
    const format = output.format ?? sniffImageFormat(input) ?? "png";
    const encoded = await current().transform({
      input,
      steps,
      output: {
        format,
        quality: output.quality ?? 90,
        flattenBackground: output.flattenBackground ?? Colors.black,
        ...(output.autoQuality === undefined ? {} : { autoQuality: output.autoQuality }),
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

  const expectColor: CodecHarness["expectColor"] = (image, x, y, color, tolerance = EXACT) => {
    const pixel = pixelAt(image, x, y);
    expect(
      colorDistance(pixel, color),
      `pixel (${x}, ${y}) is ${JSON.stringify(pixel)}, expected ${JSON.stringify(color)}`,
    ).toBeLessThanOrEqual(tolerance);
  };

  const expectRejection: CodecHarness["expectRejection"] = async (promise, code) => {
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

  return {
    get codec() {
      return current();
    },
    check,
    run,
    expectColor,
    expectRejection,
  };
}
