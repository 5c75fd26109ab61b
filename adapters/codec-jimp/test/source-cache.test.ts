import { createJimpCodec } from "@pixport/codec-jimp";
import type { ImageCodec, TransformRequest } from "@pixport/core";
import type { TransformStep } from "@pixport/core/adapter-kit";
import { Colors, decodeRaw, halvesImage, noiseImage, pixelAt } from "@pixport/testing";
import { describe, expect, it } from "vitest";

const output = { format: "png", quality: 90, flattenBackground: Colors.black } as const;
const limits = { maxInputPixels: 50_000_000 };
const request = (input: Uint8Array, steps: TransformStep[], sourceKey?: string): TransformRequest => ({
  input,
  steps,
  output,
  limits,
  ...(sourceKey === undefined ? {} : { sourceKey }),
});
const halfWidth: TransformStep[] = [
  { type: "resize", width: 40, height: 20, fit: "fill", position: "center", background: Colors.black },
];

/** The colour at the right half of a transform's output (blue or green in these tests). */
async function rightHalf(codec: ImageCodec, input: Uint8Array, sourceKey?: string) {
  const image = await decodeRaw((await codec.transform(request(input, halfWidth, sourceKey))).data);
  return pixelAt(image, 30, 10);
}

describe.each([
  ["on the calling thread", 0],
  ["in a worker thread", 1],
])("jimp codec: decoded sources kept by sourceKey (%s)", (_, workers) => {
  it("keeps a source from its second use: a third use under the same key starts from its pixels", async () => {
    const codec = createJimpCodec({ workers });
    try {
      const blue = await halvesImage(80, 40, Colors.red, Colors.blue);
      const green = await halvesImage(80, 40, Colors.red, Colors.green);
      expect((await rightHalf(codec, blue, "k")).b).toBeGreaterThan(200);
      expect((await rightHalf(codec, blue, "k")).b).toBeGreaterThan(200);
      // Other bytes under the same key (breaking its promise on purpose): the kept picture.
      expect((await rightHalf(codec, green, "k")).b).toBeGreaterThan(200);
      expect((await rightHalf(codec, green)).g).toBeGreaterThan(200);
      // A key used once keeps nothing.
      await rightHalf(codec, blue, "once");
      expect((await rightHalf(codec, green, "once")).g).toBeGreaterThan(200);
    } finally {
      await (codec as { close?(): Promise<void> }).close?.();
    }
  });

  it("keeps nothing with sourceCacheBytes 0, and gives the same pixels kept or decoded for every step", async () => {
    const off = createJimpCodec({ workers, sourceCacheBytes: 0 });
    const kept = createJimpCodec({ workers });
    try {
      const blue = await halvesImage(80, 40, Colors.red, Colors.blue);
      const green = await halvesImage(80, 40, Colors.red, Colors.green);
      for (let use = 0; use < 2; use += 1) await rightHalf(off, blue, "off");
      expect((await rightHalf(off, green, "off")).g).toBeGreaterThan(200);

      const input = await noiseImage(96, 64);
      const plans: Record<string, TransformStep[]> = {
        none: [],
        resize: halfWidth,
        "crop, mirror, rotate": [
          { type: "crop", left: 8, top: 4, width: 60, height: 50 },
          { type: "mirror", mode: "both" },
          { type: "rotate", angle: 30, background: Colors.black },
        ],
        "modulate, blur": [
          {
            type: "modulate",
            brightness: 20,
            saturation: -30,
            hue: 40,
            lightness: 0,
            exposure: 0,
            contrast: 10,
          },
          { type: "blur", sigma: 2 },
        ],
      };
      for (const [name, steps] of Object.entries(plans)) {
        const expected = await decodeRaw((await off.transform(request(input, steps))).data);
        for (let use = 0; use < 3; use += 1) {
          const actual = await decodeRaw((await kept.transform(request(input, steps, `noise/${name}`))).data);
          expect([actual.width, actual.height], `${name}, use ${use}`).toEqual([
            expected.width,
            expected.height,
          ]);
          expect(Buffer.from(actual.data).equals(Buffer.from(expected.data)), `${name}, use ${use}`).toBe(
            true,
          );
        }
      }
    } finally {
      await (off as { close?(): Promise<void> }).close?.();
      await (kept as { close?(): Promise<void> }).close?.();
    }
  });
});
