import { describe, expect, it } from "vitest";
import {
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  type ImageCodec,
  type OriginSource,
  type TransformRequest,
} from "../src/index.js";

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** A fake "png": the magic bytes, then width and height in one byte each, then a tag byte. */
const fakePng = (width: number, height: number, tag = 0) =>
  new Uint8Array([...PNG_MAGIC, width, height, tag]);

describe("variants of origin images", () => {
  it("give the codec the original's identity, so it may keep it decoded, and a new one for new bytes", async () => {
    const requests: TransformRequest[] = [];
    const codec: ImageCodec = {
      name: "fake",
      capabilities: { inputFormats: ["png"], outputFormats: ["png"], steps: ["resize"] },
      probe: async (input) => ({ format: "png", width: input[8]!, height: input[9]! }),
      transform: async (request) => {
        requests.push(request);
        const resize = request.steps.find((step) => step.type === "resize");
        const width = resize?.width ?? request.input[8]!;
        return { data: fakePng(width, width / 2), format: "png", width, height: width / 2 };
      },
    };
    let current = fakePng(80, 40, 1);
    const source: OriginSource = {
      kind: "memory",
      get: async () => ({ status: "found", data: current, validators: {}, maxAgeSeconds: 0 }),
    };
    const pipeline = createImagePipeline(
      {
        codec,
        blobStore: createMemoryBlobStore(),
        images: createMemoryImageRepository(),
        origins: { cms: source },
      },
      { delivery: { origins: { cms: { unsigned: { widths: [10, 20], qualities: [], formats: ["png"] } } } } },
    );
    const deliver = (width: number) =>
      pipeline.deliverOriginVariant({
        signature: "_",
        origin: "cms",
        modifiers: `w_${width}`,
        path: "a.png.png",
      });
    await deliver(10);
    await deliver(20);
    const [first, second] = requests.map((request) => request.sourceKey);
    expect(first).toMatch(/^origin\/[0-9a-f]+$/);
    expect(second).toBe(first);
    // New bytes at the origin (freshness 0: fetched again) are another source.
    current = fakePng(80, 40, 2);
    await deliver(10);
    expect(requests).toHaveLength(3);
    expect(requests[2]!.sourceKey).toMatch(/^origin\/[0-9a-f]+$/);
    expect(requests[2]!.sourceKey).not.toBe(first);
  });
});
