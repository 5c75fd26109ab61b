import { describe, expect, it } from "vitest";
import {
  type BackgroundRemover,
  type Caller,
  createImagePipeline,
  type ImageCodec,
  type TransformRequest,
} from "../src/index.js";
import { memoryDeps } from "./memory-deps.js";

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** A fake "png": the magic bytes, then width and height in one byte each. */
const fakePng = (width: number, height: number) => new Uint8Array([...PNG_MAGIC, width, height]);

function setup(remover?: BackgroundRemover) {
  const transforms: TransformRequest[] = [];
  const codec: ImageCodec = {
    name: "fake",
    capabilities: { inputFormats: ["png"], outputFormats: ["jpeg", "png", "webp"], steps: ["overlay"] },
    probe: async (input) => ({ format: "png", width: input[8]!, height: input[9]! }),
    transform: async (request) => {
      transforms.push(request);
      return {
        data: request.input,
        format: request.output.format,
        width: request.input[8]!,
        height: request.input[9]!,
      };
    },
  };
  const pipeline = createImagePipeline(
    memoryDeps(codec, remover === undefined ? {} : { backgroundRemover: remover }),
  );
  return { pipeline, transforms };
}

const live: Caller = { accountId: "a", keyKind: "live", keyId: "k1" };
const test: Caller = { accountId: "a", keyKind: "test", keyId: "k2" };

describe("removeImageBackground", () => {
  it("stores the remover's PNG as it is (one encode); the test mark is the only re-encode, for test keys", async () => {
    const calls: { width: number; height: number }[] = [];
    const made: Uint8Array[] = [];
    const remover: BackgroundRemover = {
      name: "fake",
      remove: async (request) => {
        calls.push({ width: request.width, height: request.height });
        made.push(fakePng(request.width, request.height));
        return made.at(-1)!;
      },
    };
    const { pipeline, transforms } = setup(remover);
    for (const caller of [live, test]) {
      const source = await pipeline.uploadImage(caller, { name: "shoe", image: fakePng(20, 10) });
      transforms.length = 0;
      const cut = await pipeline.removeImageBackground(caller, { imageId: source.id, body: undefined });
      expect(cut).toMatchObject({ name: "shoe", format: "png", width: 20, height: 10 });
      expect(cut.id).not.toBe(source.id);
      if (caller === live) {
        // No codec job: the stored bytes are the remover's.
        expect(transforms).toHaveLength(0);
        const stored = await pipeline.downloadImage(caller, { imageId: cut.id });
        expect(Buffer.from(stored.data).equals(Buffer.from(made.at(-1)!))).toBe(true);
      } else {
        expect(transforms).toHaveLength(1);
        expect(transforms[0]!.output.format).toBe("png");
        expect(transforms[0]!.steps.map((step) => step.type)).toEqual(["overlay"]);
      }
    }
    expect(calls).toEqual([
      { width: 20, height: 10 },
      { width: 20, height: 10 },
    ]);
    const source = await pipeline.uploadImage(live, { name: "shoe", image: fakePng(20, 10) });
    const named = await pipeline.removeImageBackground(live, { imageId: source.id, body: { name: "cut" } });
    expect(named.name).toBe("cut");
  });

  it("validates the body and the id, answers 404 before 501, and 501 without a remover", async () => {
    const { pipeline } = setup();
    await expect(
      pipeline.removeImageBackground(live, { imageId: "image_a00000000000000000000000", body: {} }),
    ).rejects.toMatchObject({ code: "IMAGE_NOT_FOUND" });
    const source = await pipeline.uploadImage(live, { name: "shoe", image: fakePng(20, 10) });
    await expect(
      pipeline.removeImageBackground(live, { imageId: source.id, body: {} }),
    ).rejects.toMatchObject({
      code: "MODEL_NOT_CONFIGURED",
    });
    await expect(
      pipeline.removeImageBackground(live, { imageId: "nope", body: { name: "" } }),
    ).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });

  it("refuses a remover result of another size as an internal error", async () => {
    const { pipeline } = setup({ name: "bad", remove: async () => fakePng(5, 5) });
    const source = await pipeline.uploadImage(live, { name: "shoe", image: fakePng(20, 10) });
    await expect(
      pipeline.removeImageBackground(live, { imageId: source.id, body: {} }),
    ).rejects.toMatchObject({
      code: "INTERNAL",
    });
  });
});
