import { describe, expect, it } from "vitest";
import {
  type BlobStore,
  type Caller,
  createCachingBlobStore,
  createImagePipeline,
  createMemoryBlobStore,
  type ImageCodec,
  type ModelImage,
  type TextExtractor,
  type TransformRequest,
} from "../src/index.js";
import { memoryDeps } from "./memory-deps.js";

// What a text extractor receives: a lossless provider gets the stored PNG as it is (no second
// decode and encode), a PNG re-encode of any other stored format; the others a JPEG.
const MAGIC = {
  png: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  jpeg: [0xff, 0xd8, 0xff, 0xe0, 0, 0, 0, 0],
} as const;
/** A fake image: a format's magic bytes, then width and height in one byte each. */
const fake = (format: keyof typeof MAGIC, width: number, height: number) =>
  new Uint8Array([...MAGIC[format], width, height]);

function setup(
  lossless: boolean,
  options: {
    gate?: Promise<void>;
    facts?: boolean;
    /** The extractor's own body (default: record the image, wait for `gate`, answer "text"). */
    extract?: TextExtractor["extract"];
    memoryBudget?: { maxBytes: number; maxWaitMs: number };
    blobStore?: BlobStore;
  } = {},
) {
  const transforms: TransformRequest[] = [];
  const codec: ImageCodec = {
    name: "fake",
    capabilities: { inputFormats: ["png", "jpeg"], outputFormats: ["jpeg", "png"], steps: ["resize"] },
    probe: async (input) => ({
      format: input[0] === 0x89 ? "png" : "jpeg",
      width: input[8]!,
      height: input[9]!,
    }),
    transform: async (request) => {
      transforms.push(request);
      const format = request.output.format as "png" | "jpeg";
      return {
        data: fake(format, request.input[8]!, request.input[9]!),
        format,
        width: request.input[8]!,
        height: request.input[9]!,
      };
    },
  };
  const samples: number[] = [];
  if (options.facts) {
    codec.sample = async (input) => {
      samples.push(input.length);
      return { width: 1, height: 1, data: new Uint8Array([1, 2, 3, 255]), hasAlpha: false, frames: 1 };
    };
  }
  const received: ModelImage[] = [];
  const textExtractor: TextExtractor = {
    models: ["reader"],
    defaultModel: "reader",
    lossless,
    extract:
      options.extract ??
      (async (request) => {
        received.push(request.image);
        await options.gate;
        return "text";
      }),
  };
  const extra = options.blobStore === undefined ? {} : { blobStore: options.blobStore };
  const pipeline = createImagePipeline(memoryDeps(codec, { models: { textExtractor }, ...extra }), {
    ...(options.facts ? { backgroundFacts: true, workQueue: {} } : {}),
    ...(options.memoryBudget === undefined ? {} : { memoryBudget: options.memoryBudget }),
  });
  return { pipeline, transforms, received, samples };
}

const live: Caller = { accountId: "a", keyKind: "live", keyId: "k1" };

describe("the image handed to a text extractor", () => {
  it("lossless: a stored PNG as it is stored, with no codec job", async () => {
    const { pipeline, transforms, received } = setup(true);
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    const stored = await pipeline.downloadImage(live, { imageId: image.id });
    transforms.length = 0;
    await pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    expect(transforms).toHaveLength(0);
    expect(received[0]).toMatchObject({ mimeType: "image/png", width: 30, height: 20 });
    expect(Buffer.from(received[0]!.data).equals(Buffer.from(stored.data))).toBe(true);
  });

  it("lossless: any other stored format re-encoded as a full-size PNG", async () => {
    const { pipeline, transforms, received } = setup(true);
    const image = await pipeline.uploadImage(live, { name: "photo", image: fake("jpeg", 30, 20) });
    transforms.length = 0;
    await pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    expect(transforms).toHaveLength(1);
    expect(transforms[0]!.output.format).toBe("png");
    expect(transforms[0]!.steps).toEqual([]);
    expect(received[0]).toMatchObject({ mimeType: "image/png", width: 30, height: 20 });
  });

  it("not lossless: a stored PNG is still re-encoded, as a JPEG", async () => {
    const { pipeline, transforms, received } = setup(false);
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    transforms.length = 0;
    await pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    expect(transforms).toHaveLength(1);
    expect(transforms[0]!.output.format).toBe("jpeg");
    expect(received[0]).toMatchObject({ mimeType: "image/jpeg" });
  });

  it("background facts wait while an extraction runs on the node (no slot of the gate held)", async () => {
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const { pipeline, samples } = setup(true, { gate, facts: true });
    const page = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    await expect.poll(() => samples.length).toBe(1); // its facts, once the upload is done
    const extraction = pipeline.extractFormattedText(live, { imageId: page.id, body: { format: "plain" } });
    await pipeline.uploadImage(live, { name: "second", image: fake("png", 40, 20) });
    // The second image's facts stay pending while the extraction runs...
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(samples).toHaveLength(1);
    finish();
    await extraction;
    // ...and are computed once it is over.
    await expect.poll(() => samples.length).toBe(2);
    await pipeline.stopBackgroundWork();
  });

  it("background facts read the stored bytes without counting as a use for the blob cache", async () => {
    const backend = createMemoryBlobStore();
    const reads: string[] = [];
    const blobStore = createCachingBlobStore({
      ...backend,
      get: (key, options) => {
        reads.push(key);
        return backend.get(key, options);
      },
    });
    const { pipeline, samples } = setup(true, { facts: true, blobStore });
    const page = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    const extract = () =>
      pipeline.extractFormattedText(live, { imageId: page.id, body: { format: "plain" } });
    await expect.poll(() => samples.length).toBe(1);
    await extract();
    expect(reads).toHaveLength(2); // the facts' read, then the extraction's (a first use)
    await extract(); // the second use: read again, and kept
    await extract();
    await extract();
    expect(reads).toHaveLength(3);
    await pipeline.stopBackgroundWork();
  });

  it("background facts wait for a quiet time: not in the gaps of a client sending one request after another", async () => {
    const { pipeline, samples } = setup(true, { facts: true });
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    // Requests 100 ms apart: twice the scheduler's 50 ms poll (facts used to start in such a gap
    // and run beside the next request), well under the 250 ms quiet time.
    for (let request = 0; request < 5; request += 1) {
      await pipeline.resizeImage(live, { imageId: image.id, body: { width: 10 + request } });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(samples).toHaveLength(0);
    await expect.poll(() => samples.length).toBeGreaterThanOrEqual(1);
    await pipeline.stopBackgroundWork();
  });
});

describe("an embedded extractor's memory, reserved from the node's budget", () => {
  const MB = 1024 * 1024;
  /** A pipeline whose extractor reserves `bytes` through its call options, then waits for its gate. */
  function reserving(bytes: number, memoryBudget?: { maxBytes: number; maxWaitMs: number }) {
    const gates: (() => void)[] = [];
    const offered: boolean[] = [];
    const { pipeline } = setup(true, {
      memoryBudget,
      extract: async (_request, options) => {
        offered.push(options?.reserveMemory !== undefined);
        const release = (await options?.reserveMemory?.(bytes)) ?? (() => undefined);
        try {
          await new Promise<void>((resolve) => gates.push(resolve));
          return "text";
        } finally {
          release();
        }
      },
    });
    return { pipeline, gates, offered };
  }

  it("holds what the extractor reserves while it reads, and gives it back after", async () => {
    const { pipeline, gates } = reserving(40 * MB, { maxBytes: 64 * MB, maxWaitMs: 200 });
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    const reading = pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    await expect.poll(() => pipeline.memory()?.reservedBytes).toBe(40 * MB);
    // A second reading does not fit beside it: it waits, then is refused with OVERLOADED.
    const second = pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    await expect(second).rejects.toMatchObject({ code: "OVERLOADED" });
    gates[0]?.();
    await expect(reading).resolves.toEqual({ format: "plain", content: "text" });
    expect(pipeline.memory()?.reservedBytes).toBe(0);
  });

  it("refuses a reading that could never fit with a 422 on the image", async () => {
    const { pipeline } = reserving(100 * MB, { maxBytes: 64 * MB, maxWaitMs: 200 });
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    const refused = pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    await expect(refused).rejects.toMatchObject({ code: "IMAGE_TOO_LARGE" });
    await expect(refused).rejects.toMatchObject({ issues: [{ path: "image" }] });
    expect(pipeline.memory()?.reservedBytes).toBe(0);
  });

  it("offers no reservation without a budget", async () => {
    const { pipeline, gates, offered } = reserving(100 * MB);
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    const reading = pipeline.extractFormattedText(live, { imageId: image.id, body: { format: "plain" } });
    await expect.poll(() => gates.length).toBe(1);
    gates[0]?.();
    await expect(reading).resolves.toMatchObject({ content: "text" });
    expect(offered).toEqual([false]);
  });
});

describe("the identity of a codec job's input", () => {
  it("a stored image's job carries its blob key as sourceKey (codecs may keep its decoded pixels); uploaded bytes carry none", async () => {
    const { pipeline, transforms } = setup(false);
    const image = await pipeline.uploadImage(live, { name: "page", image: fake("png", 30, 20) });
    expect(transforms.length).toBeGreaterThan(0);
    for (const request of transforms) expect(request.sourceKey).toBeUndefined();
    transforms.length = 0;
    await pipeline.resizeImage(live, { imageId: image.id, body: { width: 10 } });
    await pipeline.resizeImage(live, { imageId: image.id, body: { width: 12 } });
    expect(transforms).toHaveLength(2);
    const keys = transforms.map((request) => request.sourceKey);
    expect(keys[0]).toEqual(expect.stringContaining(image.id.toLowerCase()));
    expect(keys[1]).toBe(keys[0]);
  });
});
