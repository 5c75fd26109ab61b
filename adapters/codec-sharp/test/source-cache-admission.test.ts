import { createSharpCodec } from "@pixport/codec-sharp";
import type { TransformRequest } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";

/** A noisy JPEG: a red left half and a right half of `right` ([r, g, b]). */
async function picture(width: number, height: number, right: [number, number, number]): Promise<Uint8Array> {
  const raw = Buffer.alloc(width * height * 3);
  let seed = width * 31 + height + right[1];
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = ((seed >> 16) % 41) - 20;
      const colour = x < width / 2 ? [220, 30, 30] : right;
      const at = (y * width + x) * 3;
      for (let c = 0; c < 3; c += 1) raw[at + c] = Math.min(255, Math.max(0, colour[c]! + noise));
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
}
const BLUE: [number, number, number] = [30, 30, 220];
const GREEN: [number, number, number] = [30, 220, 30];

function request(input: Uint8Array, width: number, height: number, sourceKey: string): TransformRequest {
  return {
    input,
    steps: [
      {
        type: "resize",
        width,
        height,
        fit: "fill",
        position: "center",
        background: { r: 0, g: 0, b: 0, alpha: 1 },
      },
    ],
    output: { format: "png", quality: 90, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
    limits: { maxInputPixels: 50_000_000 },
    sourceKey,
  };
}

/** Whether the right quarter of an output is green (a kept blue source would give blue). */
async function rightIsGreen(data: Uint8Array): Promise<boolean> {
  const { data: pixels, info } = await sharp(data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  let green = 0;
  let blue = 0;
  for (let y = 0; y < info.height; y += 1) {
    for (let x = Math.ceil((info.width * 3) / 4); x < info.width; x += 1) {
      green += pixels[(y * info.width + x) * 3 + 1]!;
      blue += pixels[(y * info.width + x) * 3 + 2]!;
    }
  }
  return green > blue;
}

describe("sharp codec: which decoded sources it keeps", () => {
  it("over rotating sources, keeps the first that fit (each serving every turn) and none of the others", async () => {
    // Reductions under 2x keep the whole source: 640x400x3 bytes each, room for four.
    const each = 640 * 400 * 3;
    const codec = createSharpCodec({ sourceCacheBytes: 4 * each });
    const blue = await picture(640, 400, BLUE);
    const green = await picture(640, 400, GREEN);
    const keys = ["s0", "s1", "s2", "s3", "s4", "s5"];
    for (let turn = 0; turn < 3; turn += 1) {
      for (const [index, key] of keys.entries()) {
        await codec.transform(request(blue, 400 + turn * 6 + index, 250, key));
        expect(codec.sourceCache.bytes).toBeLessThanOrEqual(4 * each);
      }
    }
    expect(codec.sourceCache.bytes).toBe(4 * each);
    // Green bytes under each key: a kept source answers blue (the codec started from it), a source
    // not kept is decoded as given.
    const kept: string[] = [];
    for (const key of keys) {
      if (!(await rightIsGreen((await codec.transform(request(green, 410, 256, key))).data))) kept.push(key);
    }
    expect(kept).toEqual(["s0", "s1", "s2", "s3"]);
  });

  it("keeps a source reduced as far as the requests allow, and grows it when a larger size is asked", async () => {
    const codec = createSharpCodec();
    const reference = createSharpCodec({ sourceCacheBytes: 0 });
    const blue = await picture(1600, 1000, BLUE);
    const green = await picture(1600, 1000, GREEN);
    const use = async (width: number, input = blue) => {
      const height = Math.round((width * 1000) / 1600);
      const output = await codec.transform(request(input, width, height, "photo"));
      expect([output.width, output.height]).toEqual([width, height]);
      return output;
    };
    await use(300);
    expect(codec.sourceCache.bytes).toBe(0); // a first use keeps nothing
    await use(301);
    expect(codec.sourceCache.bytes).toBe(400 * 250 * 3); // 300 of 1600: kept 4x smaller
    await use(380);
    expect(codec.sourceCache.bytes).toBe(400 * 250 * 3); // still served by it
    await use(700);
    expect(codec.sourceCache.bytes).toBe(800 * 500 * 3); // needs more: kept 2x smaller
    await use(1200);
    expect(codec.sourceCache.bytes).toBe(1600 * 1000 * 3); // needs every pixel: kept whole
    // A small size again is served by the whole source (green bytes under the key answer blue).
    expect(await rightIsGreen((await use(320, green)).data)).toBe(false);
    expect(codec.sourceCache.bytes).toBe(1600 * 1000 * 3);

    // From a reduced copy, the picture is the decoded one's to a few levels.
    const fresh = createSharpCodec();
    for (let time = 0; time < 3; time += 1) await fresh.transform(request(blue, 300, 188, "again"));
    expect(fresh.sourceCache.bytes).toBe(400 * 250 * 3);
    const [kept, decoded] = await Promise.all(
      [
        fresh.transform(request(blue, 300, 188, "again")),
        reference.transform(request(blue, 300, 188, "x")),
      ].map(async (output) =>
        sharp((await output).data)
          .raw()
          .toBuffer(),
      ),
    );
    let total = 0;
    for (let index = 0; index < kept!.length; index += 1) total += Math.abs(kept![index]! - decoded![index]!);
    expect(total / kept!.length).toBeLessThan(4);
  });

  it("keeps an EXIF-rotated source reduced and upright: the same picture as a decode", async () => {
    // Stored 1600x1000 turned a quarter (orientation 6): upright it is 1000x1600, red at the top.
    const input = new Uint8Array(
      await sharp(await picture(1600, 1000, BLUE))
        .withMetadata({ orientation: 6 })
        .jpeg({ quality: 90 })
        .toBuffer(),
    );
    const codec = createSharpCodec();
    const reference = createSharpCodec({ sourceCacheBytes: 0 });
    const upright = (width: number, key: string) => request(input, width, Math.round(width * 1.6), key);
    for (let use = 0; use < 3; use += 1) await codec.transform(upright(300, "turned"));
    expect(codec.sourceCache.bytes).toBe(500 * 800 * 3); // 300 of 1000 upright: kept 2x smaller, upright
    const outputs = await Promise.all([
      codec.transform(upright(300, "turned")),
      reference.transform(upright(300, "reference")),
    ]);
    for (const output of outputs) expect([output.width, output.height]).toEqual([300, 480]);
    const [kept, decoded] = await Promise.all(outputs.map((output) => sharp(output.data).raw().toBuffer()));
    let total = 0;
    for (let index = 0; index < kept!.length; index += 1) total += Math.abs(kept![index]! - decoded![index]!);
    expect(total / kept!.length).toBeLessThan(4);
  });
});
