/**
 * The decode-and-safety group of the ImageCodec suite: headers (`probe`), source keys, bad input
 * (truncated, foreign, string, over the pixel limit, outside the capabilities) and decompression
 * bombs refused from the header.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ImageCodec, ImageFormat } from "@pixport/core";
import { ErrorCodes } from "@pixport/core";
import type { Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { TRANSFORM_STEP_TYPES } from "@pixport/core/adapter-kit";
import { afterAll, beforeAll, describe, expect } from "vitest";
import {
  Colors,
  DEFAULT_QUADRANTS,
  decodeRaw,
  GARBAGE_BYTES,
  HEIC_HEVC_BYTES,
  noiseImage,
  orientedJpeg,
  pixelAt,
  pngBomb,
  quadrantsImage,
  type RawImage,
  SVG_BYTES,
  solidImage,
  truncate,
} from "../fixtures/images.js";
import { type CodecHarness, DEFAULT_LIMITS, LOSSY } from "./image-codec-harness.js";

export function describeProbe(h: CodecHarness): void {
  const { check } = h;
  describe("probe", () => {
    for (const format of ["jpeg", "png", "webp"] as const) {
      check("probe", `reads the format and size of a ${format} header`, async () => {
        const input = await solidImage(30, 20, Colors.grey, format);
        expect(await h.codec.probe(input)).toEqual({ format, width: 30, height: 20 });
      });
    }

    check("probe", "returns null for SVG, GIF, garbage and empty input", async () => {
      for (const input of [SVG_BYTES, GARBAGE_BYTES, HEIC_HEVC_BYTES, new Uint8Array(0)]) {
        expect(await h.codec.probe(input)).toBeNull();
      }
    });

    check("probe", "reports dimensions after EXIF orientation (orientation 6 is portrait)", async () => {
      expect(await h.codec.probe(await orientedJpeg(40, 20))).toEqual({
        format: "jpeg",
        width: 20,
        height: 40,
      });
    });

    check("probe", "accepts a plain Uint8Array view at a non-zero offset", async () => {
      const bytes = await solidImage(12, 7, Colors.red, "png");
      const backing = new Uint8Array(bytes.length + 9).fill(0xab);
      backing.set(bytes, 9);
      expect(await h.codec.probe(backing.subarray(9))).toEqual({ format: "png", width: 12, height: 7 });
    });
  });
}

export function describeSourceKey(h: CodecHarness): void {
  const { check, expectColor } = h;
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
        const keyed = (input: Uint8Array, sourceKey: string, steps: TransformStep[], format: ImageFormat) =>
          transformKeyed(h.codec, input, sourceKey, steps, format);
        for (let use = 0; use < 3; use += 1) {
          const whole = await keyed(quadrants, key, [], "png");
          expect([whole.width, whole.height]).toEqual([80, 40]);
          expectColor(whole, 10, 10, DEFAULT_QUADRANTS.topLeft);
          expectColor(whole, 70, 30, DEFAULT_QUADRANTS.bottomRight);
          if (h.codec.capabilities.steps.includes("mirror")) {
            const mirrored = await keyed(quadrants, key, [{ type: "mirror", mode: "horizontal" }], "png");
            expectColor(mirrored, 10, 10, DEFAULT_QUADRANTS.topRight);
            expectColor(mirrored, 70, 30, DEFAULT_QUADRANTS.bottomLeft);
          }
          if (h.codec.capabilities.steps.includes("crop")) {
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
            await h.codec.transform({
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
}

export function describeErrors(h: CodecHarness): void {
  describe("errors", () => {
    errorsOfInput(h);
    errorsOfCapabilities(h);
  });
}

function errorsOfInput(h: CodecHarness): void {
  const { check, run, expectRejection } = h;
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
      layers: [{ input: corrupt, left: 0, top: 0, width: 10, height: 10, repeat: "no-repeat", opacity: 1 }],
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
      await expect(h.codec.probe(input)).rejects.toThrow(TypeError);
      await expect(
        h.codec.transform({
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
}

function errorsOfCapabilities(h: CodecHarness): void {
  const { check, run, expectRejection } = h;
  check(
    "errors",
    "a step or output format outside the capabilities rejects with UNSUPPORTED_OPERATION",
    async () => {
      const input = await solidImage(8, 8, Colors.red, "png");
      const unknownStep = { type: "sepia" } as unknown as TransformStep;
      await expectRejection(run(input, [unknownStep], { format: "png" }), ErrorCodes.UNSUPPORTED_OPERATION);
      await expectRejection(
        h.codec.transform({
          input,
          steps: [],
          output: { format: "bmp" as ImageFormat, quality: 90, flattenBackground: Colors.black },
          limits: DEFAULT_LIMITS,
        }),
        ErrorCodes.UNSUPPORTED_OPERATION,
      );
      // A real step the codec does not declare is refused too (nothing to check for full codecs).
      for (const type of TRANSFORM_STEP_TYPES.filter((step) => !h.codec.capabilities.steps.includes(step))) {
        const step = { type: "blur", sigma: 1 } as const;
        await expectRejection(
          run(input, [{ ...step, type } as unknown as TransformStep], { format: "png" }),
          ErrorCodes.UNSUPPORTED_OPERATION,
        );
      }
    },
  );
}

export function describeBombs(h: CodecHarness): void {
  const { check, run, expectRejection } = h;
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
      const header = await h.codec.probe(bomb);
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
}

/** Transforms `input` under `sourceKey` to `format` and decodes the result. */
async function transformKeyed(
  codec: ImageCodec,
  input: Uint8Array,
  sourceKey: string,
  steps: TransformStep[],
  format: ImageFormat,
): Promise<RawImage> {
  const encoded = await codec.transform({
    input,
    steps,
    output: { format, quality: 90, flattenBackground: Colors.black },
    limits: DEFAULT_LIMITS,
    sourceKey,
  });
  return decodeRaw(encoded.data);
}
