import { describe, expect, it } from "vitest";
import { defineImageCodec } from "../src/adapter-kit.js";
import { type Caller, createImagePipeline, type ImageFormat, type TransformRequest } from "../src/index.js";
import { uncheckedTransform } from "../src/internal.js";
import { memoryDeps } from "./memory-deps.js";

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** A fake "png": the magic bytes, then width and height in one byte each. */
const fakePng = (width: number, height: number) => new Uint8Array([...PNG_MAGIC, width, height]);
const live: Caller = { accountId: "a", keyKind: "live", keyId: "key_a" };

/** A codec made with the kit whose output-format checks are counted. */
function countedCodec() {
  const counter = { checks: 0, raw: [] as TransformRequest[] };
  const formats: ImageFormat[] = ["png", "jpeg"];
  const outputFormats = Object.assign([...formats], {
    includes(format: ImageFormat) {
      counter.checks += 1;
      return formats.includes(format);
    },
  });
  const codec = defineImageCodec({
    name: "counted",
    capabilities: { inputFormats: ["png"], outputFormats, steps: ["mirror", "overlay"] },
    probe: async (input: Uint8Array) => ({ format: "png" as const, width: input[8]!, height: input[9]! }),
    transform: async (request: TransformRequest) => {
      counter.raw.push(request);
      return {
        data: request.input,
        format: request.output.format,
        width: request.input[8]!,
        height: request.input[9]!,
      };
    },
  });
  return { codec, counter };
}

describe("the codec kit", () => {
  it("checks a direct call's shape, capabilities and bytes before the adapter runs", async () => {
    const { codec, counter } = countedCodec();
    const request = (overrides: Partial<TransformRequest>): TransformRequest => ({
      input: fakePng(4, 4),
      steps: [],
      output: { format: "png", quality: 80, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
      limits: { maxInputPixels: 1_000_000 },
      ...overrides,
    });
    await expect(codec.transform(request({ input: "/etc/passwd" as never }))).rejects.toThrow(TypeError);
    await expect(
      codec.transform(request({ steps: [{ type: "blur", sigma: 2 }] as never })),
    ).rejects.toMatchObject({
      code: "UNSUPPORTED_OPERATION",
      message: "The counted codec cannot run the blur step.",
    });
    await expect(
      codec.transform(request({ output: { format: "gif", quality: 80 } as never })),
    ).rejects.toMatchObject({
      code: "UNSUPPORTED_OPERATION",
      message: expect.stringContaining("cannot encode gif"),
    });
    await expect(codec.transform(request({ input: new Uint8Array([1, 2, 3]) }))).rejects.toMatchObject({
      code: "INVALID_IMAGE",
    });
    expect(counter.raw).toHaveLength(0);
    await codec.transform(request({ steps: [{ type: "mirror", mode: "horizontal" }] }));
    expect(counter.raw).toHaveLength(1);
    // The adapter's own transform, for a caller that checked already, skips the kit.
    await uncheckedTransform(codec)(request({ output: { format: "gif", quality: 1 } as never }));
    expect(counter.raw).toHaveLength(2);
  });

  it("runs the capability check once per pipeline job (the core checks, the adapter does not repeat it)", async () => {
    const { codec, counter } = countedCodec();
    const pipeline = createImagePipeline(memoryDeps(codec));
    counter.checks = 0;
    const source = await pipeline.uploadImage(live, { name: "a", image: fakePng(8, 6) });
    expect(counter.checks).toBe(1);
    await pipeline.mirrorImage(live, { imageId: source.id, body: { mode: "horizontal" } });
    expect(counter.checks).toBe(2);
    expect(counter.raw).toHaveLength(2);
  });
});
