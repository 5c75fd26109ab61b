/** The encode group of the ImageCodec suite: re-encoding, conversion, quality, EXIF and transparency. */
import type { TransformStep } from "@pixport/core/adapter-kit";
import { describe, expect } from "vitest";
import {
  Colors,
  decodeRaw,
  describeEncoded,
  encodePixels,
  halvesImage,
  noiseImage,
  orientedJpeg,
  paintPixels,
  pixelAt,
} from "../fixtures/images.js";
import { type CodecHarness, EXACT, LOSSY } from "./image-codec-harness.js";

export function describeEncode(h: CodecHarness): void {
  describe("encode", () => {
    encodeFormatsAndQuality(h);
    encodeTransparency(h);
    encodeAutoQuality(h);
  });
}

/** A photo-like picture: smooth gradients under mild deterministic grain. */
function gradientImage(width: number, height: number): Promise<Uint8Array> {
  let state = 7;
  const grain = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state >>> 28) - 8;
  };
  const clamp = (value: number) => Math.max(0, Math.min(255, Math.round(value)));
  return encodePixels(
    paintPixels(width, height, (x, y) => ({
      r: clamp((255 * x) / width + grain()),
      g: clamp(128 + 100 * Math.sin(y / 9) + grain()),
      b: clamp((255 * y) / height + grain()),
      alpha: 1,
    })),
    "png",
  );
}

function encodeAutoQuality(h: CodecHarness): void {
  const { check, run } = h;
  // Whole outputs are searched directly, larger ones on a probe: both sizes.
  for (const [width, height] of [
    [96, 80],
    [360, 240],
  ] as const) {
    check(
      "encode",
      `autoQuality: a stricter SSIM target never chooses a lower quality (${width} x ${height})`,
      async () => {
        const input = await gradientImage(width, height);
        for (const format of h.codec.capabilities.autoQuality ?? []) {
          const range = { min: 20, max: 95 };
          const loose = await run(input, [], { format, quality: 70, autoQuality: { ssim: 0.9, ...range } });
          const strict = await run(input, [], {
            format,
            quality: 70,
            autoQuality: { ssim: 0.995, ...range },
          });
          for (const chosen of [loose, strict]) {
            expect([chosen.image.width, chosen.image.height]).toEqual([width, height]);
            expect(chosen.encoded.quality, `${format}: the quality chosen`).toBeGreaterThanOrEqual(range.min);
            expect(chosen.encoded.quality, `${format}: the quality chosen`).toBeLessThanOrEqual(range.max);
          }
          expect(loose.encoded.quality!, format).toBeLessThan(strict.encoded.quality!);
          expect(loose.encoded.data.byteLength, format).toBeLessThan(strict.encoded.data.byteLength);
        }
      },
    );
  }
}

function encodeFormatsAndQuality(h: CodecHarness): void {
  const { check, run, expectColor } = h;
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
    expect(Buffer.from(image.data).equals(Buffer.from(original.data)), "decoded pixels differ").toBe(true);
  });
}

function encodeTransparency(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check("encode", "flattens transparency onto flattenBackground for jpeg (black by default)", async () => {
    const input = await halvesImage(20, 20, Colors.transparent, Colors.white, "png");
    const black = await run(input, [], { format: "jpeg" });
    expectColor(black.image, 3, 10, Colors.black, LOSSY);
    expectColor(black.image, 16, 10, Colors.white, LOSSY);
    const white = await run(input, [], { format: "jpeg", flattenBackground: Colors.white });
    expectColor(white.image, 3, 10, Colors.white, LOSSY);
  });

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
}
