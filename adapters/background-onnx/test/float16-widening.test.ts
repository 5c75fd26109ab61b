import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { channelModel, float16RoundingModel } from "./tiny-onnx.js";

const require = createRequire(import.meta.url);
const { widenFloat16 } = require("../src/float16-widening.cjs") as {
  widenFloat16(model: Uint8Array): {
    model: Uint8Array;
    widened: boolean;
    tensors: number;
    casts: number;
    types: number;
  };
};
const ort = require("onnxruntime-node") as typeof import("onnxruntime-node");

async function run(model: Uint8Array, x: number): Promise<number[]> {
  const session = await ort.InferenceSession.create(model);
  try {
    const outputs = await session.run({ x: new ort.Tensor("float32", new Float32Array([x]), [1]) });
    return [...(outputs.y!.data as Float32Array)];
  } finally {
    await session.release();
  }
}

describe("widenFloat16", () => {
  it("turns a float16 model's values into float32 values", async () => {
    const model = float16RoundingModel();
    // As written, the values travel as float16: 2049 rounds to 2048.
    expect(await run(model, 2049)).toEqual([2048, 0.5]);
    const widened = widenFloat16(model);
    expect(widened).toMatchObject({ widened: true, tensors: 1, casts: 1, types: 1 });
    expect(await run(widened.model, 2049)).toEqual([2049, 0.5]);
    expect(await run(widened.model, 1 / 3)).toEqual([Math.fround(1 / 3), 0.5]);
  });

  it("answers a model without float16 unchanged (the same bytes)", () => {
    const model = channelModel({ layout: "nchw", height: 4, width: 4 });
    const result = widenFloat16(model);
    expect(result.widened).toBe(false);
    expect(result.model).toBe(model);
  });

  it("refuses bytes that are not a protobuf message", () => {
    expect(() => widenFloat16(Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))).toThrow(/truncated/);
  });
});
