import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";

// The pre- and post-processing graphs run by onnxruntime, value by value against the formulas
// they replace (the JavaScript loops of the earlier worker).
const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node") as typeof import("onnxruntime-node");
const { preprocessModel, postprocessModel } = require("../src/tensor-graphs.cjs") as {
  preprocessModel(settings: object): Uint8Array;
  postprocessModel(settings: Record<string, unknown>): Uint8Array;
};

async function runOnce(model: Uint8Array, feeds: Record<string, import("onnxruntime-node").Tensor>) {
  const session = await ort.InferenceSession.create(model);
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

describe("tensor graphs", () => {
  const mean = [0.485, 0.456, 0.406];
  const std = [0.229, 0.224, 0.225];
  // Every byte value in every channel: a 1 x 256 image whose pixel x is (x, 255 - x, x ^ 0x55).
  const rgb = new Uint8Array(256 * 3);
  for (let x = 0; x < 256; x += 1) rgb.set([x, 255 - x, x ^ 0x55], x * 3);
  const expected = (x: number, channel: number) =>
    (rgb[x * 3 + channel]! / 255 - mean[channel]!) / std[channel]!;

  it("pre: normalises every byte value per channel, NCHW planes in R, G, B order", async () => {
    const { tensor } = await runOnce(
      preprocessModel({ inputWidth: 256, inputHeight: 1, mean, std, layout: "nchw" }),
      { rgb: new ort.Tensor("uint8", rgb, [1, 1, 256, 3]) },
    );
    expect(tensor!.dims).toEqual([1, 3, 1, 256]);
    const data = tensor!.data as Float32Array;
    for (let channel = 0; channel < 3; channel += 1)
      for (let x = 0; x < 256; x += 1) expect(data[channel * 256 + x]).toBeCloseTo(expected(x, channel), 5);
  });

  it("pre: keeps the interleaved order for NHWC models", async () => {
    const { tensor } = await runOnce(
      preprocessModel({ inputWidth: 256, inputHeight: 1, mean, std, layout: "nhwc" }),
      { rgb: new ort.Tensor("uint8", rgb, [1, 1, 256, 3]) },
    );
    expect(tensor!.dims).toEqual([1, 1, 256, 3]);
    const data = tensor!.data as Float32Array;
    for (let x = 0; x < 256; x += 1)
      for (let channel = 0; channel < 3; channel += 1)
        expect(data[x * 3 + channel]).toBeCloseTo(expected(x, channel), 5);
  });

  /** The formula of the former JavaScript loop, in float64. */
  function reference(values: number[], output: string, normalize: string, clip: number): number[] {
    const probabilities = values.map((value) => {
      const p = output === "logits" ? 1 / (1 + Math.exp(-value)) : value;
      return Number.isNaN(p) ? 0 : p;
    });
    const min = Math.min(...probabilities);
    const max = Math.max(...probabilities);
    const stretch = normalize === "minmax" && max - min > 1e-6;
    return probabilities.map((p) => {
      const value = stretch ? (p - min) / (max - min) : p;
      return Math.round(Math.min(1, Math.max(0, (value - clip) / (1 - 2 * clip))) * 255);
    });
  }

  for (const [output, normalize, clip] of [
    ["probability", "none", 0],
    ["probability", "none", 0.02],
    ["logits", "none", 0],
    ["probability", "minmax", 0],
    ["logits", "minmax", 0.1],
  ] as const) {
    it(`post: ${output}, ${normalize}, alphaClip ${clip}: alpha bytes as the formula gives them`, async () => {
      const values: number[] = [];
      for (let index = 0; index < 1000; index += 1)
        values.push(output === "logits" ? (index - 500) / 50 : 0.1 + (index / 999) * 0.8);
      values[7] = Number.NaN;
      const { mask } = await runOnce(postprocessModel({ output, normalize, alphaClip: clip }), {
        map: new ort.Tensor("float32", Float32Array.from(values), [1, 1, 1, 1000]),
      });
      expect(mask!.type).toBe("uint8");
      expect(mask!.dims).toEqual([1, 1, 1, 1000]);
      const want = reference(
        values.map((value) => Math.fround(value)),
        output,
        normalize,
        clip,
      );
      const got = [...(mask!.data as Uint8Array)];
      // float32 arithmetic against float64: at most one step apart, and exact almost everywhere.
      const off = got.filter((value, index) => value !== want[index]);
      expect(Math.max(...got.map((value, index) => Math.abs(value - want[index]!)))).toBeLessThanOrEqual(1);
      expect(off.length).toBeLessThanOrEqual(10);
      expect(got[7]).toBe(want[7]);
    });
  }

  it("post with resize: the alpha scaled bilinearly (half-pixel centres) before rounding, opaque kept at 255", async () => {
    // A 3 x 2 map scaled to 7 x 5: each output pixel against bilinear interpolation of the
    // unrounded alpha, in float64; the top-left 2 x 1 corner is certain (1.0) and stays 255.
    const values = [1, 1, 0.25, 0.6, 0.1, 0];
    const [w, h, W, H] = [3, 2, 7, 5];
    const { mask } = await runOnce(
      postprocessModel({ output: "probability", normalize: "none", alphaClip: 0.02, resize: "up" }),
      {
        map: new ort.Tensor("float32", Float32Array.from(values), [1, 1, h, w]),
        size: new ort.Tensor("int64", BigInt64Array.from([1n, 1n, BigInt(H), BigInt(W)]), [4]),
      },
    );
    expect(mask!.dims).toEqual([1, 1, H, W]);
    const alpha = values.map((p) => Math.min(1, Math.max(0, (Math.fround(p) - 0.02) / 0.96)) * 255);
    const at = (x: number, y: number) =>
      alpha[Math.min(h - 1, Math.max(0, y)) * w + Math.min(w - 1, Math.max(0, x))]!;
    const got = mask!.data as Uint8Array;
    for (let y = 0; y < H; y += 1) {
      for (let x = 0; x < W; x += 1) {
        const sx = Math.max(0, ((x + 0.5) * w) / W - 0.5);
        const sy = Math.max(0, ((y + 0.5) * h) / H - 0.5);
        const [x0, y0] = [Math.floor(sx), Math.floor(sy)];
        const [fx, fy] = [sx - x0, sy - y0];
        const want =
          (1 - fy) * ((1 - fx) * at(x0, y0) + fx * at(x0 + 1, y0)) +
          fy * ((1 - fx) * at(x0, y0 + 1) + fx * at(x0 + 1, y0 + 1));
        expect(Math.abs(got[y * W + x]! - Math.floor(want + 0.5)), `pixel ${x},${y}`).toBeLessThanOrEqual(1);
      }
    }
    expect(got[0]).toBe(255);
    expect(got[W * H - 1]).toBe(0);
  });

  it("post with resize: a shrinking mask is antialiased (a 1-pixel checkerboard shrunk 7x is mid grey, not aliased)", async () => {
    // 63 -> 9: each output centre falls on an input pixel centre ((x + 0.5) * 7 - 0.5 = 7x + 3).
    const [w, h] = [63, 63];
    const values = Array.from({ length: w * h }, (_, i) => ((i % w) + Math.floor(i / w)) % 2);
    const { mask } = await runOnce(
      postprocessModel({ output: "probability", normalize: "none", alphaClip: 0, resize: "down" }),
      {
        map: new ort.Tensor("float32", Float32Array.from(values), [1, 1, h, w]),
        size: new ort.Tensor("int64", BigInt64Array.from([1n, 1n, 9n, 9n]), [4]),
      },
    );
    expect(mask!.dims).toEqual([1, 1, 9, 9]);
    // Point-sampled bilinear would read one input pixel each: 0 or 255.
    for (const value of mask!.data as Uint8Array) expect(Math.abs(value - 127.5)).toBeLessThanOrEqual(16);
  });

  it("post: a flat map is left as it is by minmax", async () => {
    const { mask } = await runOnce(
      postprocessModel({ output: "probability", normalize: "minmax", alphaClip: 0 }),
      {
        map: new ort.Tensor("float32", new Float32Array(16).fill(0.5), [4, 4]),
      },
    );
    expect([...(mask!.data as Uint8Array)]).toEqual(new Array(16).fill(128));
  });
});
