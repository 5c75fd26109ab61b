import { describe, expect, it } from "vitest";
import {
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  ErrorCodes,
  type ImageCodec,
  type ImagePipelineOptions,
  type OriginSource,
  type VariantSigner,
} from "../src/index.js";
import { fake, fakeCodec, refusal, sizeOf } from "./fake-png.js";

/** The fake codec "resizing" by rewriting the declared size; `hold` makes every transform wait for it. */
function resizingCodec(hold?: Promise<void>) {
  const { codec, calls } = fakeCodec(["resize"], (request) => {
    const resize = request.steps.find((step) => step.type === "resize");
    const size = sizeOf(request.input);
    const width = resize?.width ?? size.width;
    const height = resize?.height ?? size.height;
    return { data: fake(width, height), width, height };
  });
  const held: ImageCodec = {
    ...codec,
    transform: async (request) => {
      const made = codec.transform(request);
      await hold;
      return made;
    },
  };
  return { codec: held, calls };
}

/** An origin of 40x20 images at any path; `hold` makes every fetch wait for it. */
function fakeOrigin(hold?: Promise<void>) {
  const fetched: string[] = [];
  const source: OriginSource = {
    kind: "fake",
    async get(request) {
      fetched.push(request.segments.join("/"));
      await hold;
      return { status: "found", data: fake(40, 20), validators: { etag: '"1"' } };
    },
  };
  return { source, fetched };
}

/** Accepts the signature `ok` for every path. */
const signer: VariantSigner = {
  sign: async () => "ok",
  verify: async (_path, signature) => signature === "ok",
};

function deferred(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

function pipelineOf(
  codec: ImageCodec,
  origins: Record<string, OriginSource>,
  options: ImagePipelineOptions = {},
) {
  return createImagePipeline(
    {
      codec,
      blobStore: createMemoryBlobStore(),
      images: createMemoryImageRepository(),
      variantSigner: signer,
      origins,
    },
    options,
  );
}

/** Yields to the event loop until `condition` holds (what the test waits on is in flight). */
async function until(condition: () => boolean) {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

const ask = (origin: string, path: string, width: number) => ({
  signature: "ok",
  origin,
  modifiers: `w_${width}`,
  path: `${path}.png`,
});

describe("origin delivery in a library pipeline", () => {
  it("a slow origin holds only its own fetch slots: past them its misses are OVERLOADED, other origins answer", async () => {
    const stall = deferred();
    const slow = fakeOrigin(stall.promise);
    const fast = fakeOrigin();
    const pipeline = pipelineOf(
      resizingCodec().codec,
      { slow: slow.source, fast: fast.source },
      { delivery: { origins: { slow: { fetches: { maxActive: 1, maxQueued: 0, maxWaitMs: 60_000 } } } } },
    );
    const stuck = pipeline.deliverOriginVariant(ask("slow", "a.png", 10));
    await until(() => slow.fetched.length > 0);
    expect((await refusal(pipeline.deliverOriginVariant(ask("slow", "b.png", 10)))).code).toBe(
      ErrorCodes.OVERLOADED,
    );
    const other = await pipeline.deliverOriginVariant(ask("fast", "a.png", 10));
    expect([other.cache, sizeOf(other.data).width]).toEqual(["MISS", 10]);
    stall.release();
    expect(sizeOf((await stuck).data).width).toBe(10);
    expect(slow.fetched).toEqual(["a.png"]);
  });

  it("a miss takes a slot of the node's work gate; the original's fetch does not", async () => {
    const stall = deferred();
    const { codec, calls } = resizingCodec(stall.promise);
    const origin = fakeOrigin();
    const pipeline = pipelineOf(codec, { cms: origin.source }, { workQueue: { maxActive: 1, maxQueued: 0 } });
    const first = pipeline.deliverOriginVariant(ask("cms", "a.png", 10));
    await until(() => calls.length > 0);
    expect((await refusal(pipeline.deliverOriginVariant(ask("cms", "a.png", 12)))).code).toBe(
      ErrorCodes.OVERLOADED,
    );
    // The refused miss still read the (cached) original: fetching is outside the gate.
    expect((await refusal(pipeline.deliverOriginVariant(ask("cms", "b.png", 12)))).code).toBe(
      ErrorCodes.OVERLOADED,
    );
    expect(origin.fetched).toEqual(["a.png", "b.png"]);
    stall.release();
    expect((await first).cache).toBe("MISS");
    expect((await pipeline.deliverOriginVariant(ask("cms", "a.png", 10))).cache).toBe("HIT");
  });

  it("misses count in the origin's account with its allowance; hits and an origin without an account do not", async () => {
    const origin = fakeOrigin();
    const pipeline = pipelineOf(
      resizingCodec().codec,
      { owned: origin.source, loose: origin.source },
      {
        delivery: { origins: { owned: { account: "trial-owner" } } },
        policies: { trialVariantsPerMonth: 2 },
      },
    );
    await pipeline.deliverOriginVariant(ask("owned", "a.png", 10));
    await pipeline.deliverOriginVariant(ask("owned", "a.png", 12));
    expect((await pipeline.deliverOriginVariant(ask("owned", "a.png", 10))).cache).toBe("HIT");
    expect((await refusal(pipeline.deliverOriginVariant(ask("owned", "a.png", 14)))).code).toBe(
      ErrorCodes.QUOTA_EXCEEDED,
    );
    expect((await pipeline.usage("trial-owner")).variants).toBe(2);
    expect((await pipeline.deliverOriginVariant(ask("loose", "a.png", 14))).cache).toBe("MISS");
    expect((await pipeline.usage("trial-owner")).variants).toBe(2);
  });

  it("applies the input limits from the original's header before any decode", async () => {
    const { codec, calls } = resizingCodec();
    const pipeline = pipelineOf(codec, { cms: fakeOrigin().source }, { limits: { maxInputPixels: 500 } });
    expect((await refusal(pipeline.deliverOriginVariant(ask("cms", "a.png", 10)))).code).toBe(
      ErrorCodes.IMAGE_TOO_LARGE,
    );
    expect(calls).toHaveLength(0);
  });

  it("answers ORIGIN_NOT_FOUND for an unknown origin and refuses an origin configured without a source", async () => {
    const pipeline = pipelineOf(resizingCodec().codec, { cms: fakeOrigin().source });
    expect((await refusal(pipeline.deliverOriginVariant(ask("nowhere", "a.png", 10)))).code).toBe(
      ErrorCodes.ORIGIN_NOT_FOUND,
    );
    expect(() => pipelineOf(resizingCodec().codec, {}, { delivery: { origins: { cms: {} } } })).toThrow(
      /delivery\.origins\.cms has no origin source/,
    );
  });
});
