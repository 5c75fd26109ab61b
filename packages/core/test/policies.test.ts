import { describe, expect, it } from "vitest";
import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryAccountStore,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  createMemoryQuotaStore,
  createMemoryRateLimiter,
  type ImageCodec,
  type ImageRecord,
  isImagePipelineError,
} from "../src/index.js";
import { sweepExpiredTestImages } from "../src/operations/sweep-expired-images.js";
import { pipelineContext } from "../src/pipeline.js";
import {
  admitRequest,
  type PolicyContext,
  policyOptionsSchema,
  quotaPeriod,
  RateLimitedError,
  withQuota,
} from "../src/policies/limits-policy.js";
import { DEFAULT_TEST_WATERMARK, testWatermarkLayer } from "../src/policies/test-watermark.js";

function manualClock(start: number) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => (now += ms) };
}

function policyContext(overrides: Partial<PolicyContext> = {}) {
  const clock = manualClock(Date.UTC(2026, 10, 30, 23, 59, 0));
  const outages: string[] = [];
  const context: PolicyContext = {
    rateLimiter: createMemoryRateLimiter({ clock }),
    quota: createMemoryQuotaStore(),
    accounts: createMemoryAccountStore(),
    clock,
    policies: policyOptionsSchema.parse({}),
    onOutage: (what) => outages.push(what),
    ...overrides,
  };
  return { context, clock, outages };
}

const testKey = { accountId: "acme", keyKind: "test", keyId: "key_t" } as const;
const liveKey = { accountId: "acme", keyKind: "live", keyId: "key_l" } as const;

describe("admitRequest", () => {
  it("admits 10 requests a minute for test keys and 100 for live keys, then throws RATE_LIMITED", async () => {
    const { context } = policyContext();
    for (let index = 0; index < 10; index++)
      expect((await admitRequest(context, testKey))?.remaining).toBe(9 - index);
    const error = await admitRequest(context, testKey).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).code).toBe("RATE_LIMITED");
    expect((error as RateLimitedError).retryAfterSeconds).toBe(60);
    for (let index = 0; index < 100; index++) await admitRequest(context, liveKey);
    await expect(admitRequest(context, liveKey)).rejects.toBeInstanceOf(RateLimitedError);
  });

  it("honours a per-key override", async () => {
    const { context } = policyContext();
    for (let index = 0; index < 12; index++)
      await admitRequest(context, { ...testKey, rateLimitPerMinute: 12 });
    await expect(admitRequest(context, { ...testKey, rateLimitPerMinute: 12 })).rejects.toBeInstanceOf(
      RateLimitedError,
    );
  });

  it("fails closed on a store outage by default and open when configured", async () => {
    const { ImagePipelineError } = await import("../src/index.js");
    const down = {
      consume: async () => {
        throw new ImagePipelineError("STORAGE_UNAVAILABLE", "down", { retryAfterSeconds: 1 });
      },
    };
    const closed = policyContext({ rateLimiter: down });
    const error = await admitRequest(closed.context, testKey).catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("STORAGE_UNAVAILABLE");
    const open = policyContext({
      rateLimiter: down,
      policies: policyOptionsSchema.parse({ onStoreOutage: "fail-open" }),
    });
    expect(await admitRequest(open.context, testKey)).toBeNull();
    expect(open.outages).toEqual(["rate limiter"]);
  });
});

describe("withQuota", () => {
  it("caps live trial accounts at 25 images a month and refuses with QUOTA_EXCEEDED", async () => {
    const { context } = policyContext();
    for (let index = 0; index < 25; index++) await withQuota(context, liveKey, 1, async () => "ok");
    const error = await withQuota(context, liveKey, 1, async () => "ok").catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe("QUOTA_EXCEEDED");
    expect(await context.quota.usage("acme", "2026-11")).toBe(25);
  });

  it("never counts test keys and gives a reservation back when the operation fails", async () => {
    const { context } = policyContext();
    await withQuota(context, testKey, 1, async () => "ok");
    expect(await context.quota.usage("acme", "2026-11")).toBe(0);
    await expect(
      withQuota(context, liveKey, 2, async () => Promise.reject(new Error("codec crashed"))),
    ).rejects.toThrow("codec crashed");
    expect(await context.quota.usage("acme", "2026-11")).toBe(0);
  });

  it("counts upgraded accounts without a cap, and starts afresh in a new UTC month", async () => {
    const { context, clock } = policyContext();
    for (let index = 0; index < 25; index++) await withQuota(context, liveKey, 1, async () => "ok");
    clock.advance(60_000);
    expect(quotaPeriod(context.clock.now())).toBe("2026-12");
    expect(await withQuota(context, liveKey, 1, async () => "december")).toBe("december");
    await context.accounts.setUpgraded("acme", true);
    for (let index = 0; index < 30; index++) await withQuota(context, liveKey, 1, async () => "ok");
    expect(await context.quota.usage("acme", "2026-12")).toBe(31);
  });
});

describe("testWatermarkLayer", () => {
  it("tiles the mark over the whole image at a size relative to the image", () => {
    const large = testWatermarkLayer({ width: 4000, height: 3000 });
    expect(large).toMatchObject({
      left: 0,
      top: 0,
      repeat: "repeat",
      opacity: 0.5,
      width: DEFAULT_TEST_WATERMARK.width,
    });
    const small = testWatermarkLayer({ width: 100, height: 50 });
    expect(small.width).toBe(24);
    expect(small.height).toBeGreaterThan(0);
    expect([...small.input.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
  });
});

describe("sweepExpiredTestImages", () => {
  const unusedCodec: ImageCodec = {
    name: "unused",
    capabilities: { inputFormats: [], outputFormats: [], steps: [] },
    probe: () => Promise.reject(new Error("unused")),
    transform: () => Promise.reject(new Error("unused")),
  };

  it("removes test-stage images older than the cutoff with their bytes and public copy, and nothing else", async () => {
    const blobStore = createMemoryBlobStore();
    const publicStore = createMemoryBlobStore();
    const images = createMemoryImageRepository();
    const pipeline = createImagePipeline({
      codec: unusedCodec,
      blobStore,
      images,
      keys: createMemoryKeyStore(),
      publisher: createBlobStorePublisher({
        source: blobStore,
        target: publicStore,
        publicBaseUrl: "https://cdn.test",
      }),
    });
    const record = (id: string, stage: "test" | "live", createdAt: string): ImageRecord => ({
      id,
      accountId: "acme",
      stage,
      name: id,
      format: "png",
      width: 1,
      height: 1,
      size: 1,
      createdAt,
      blobKey: `images/${id}.png`,
      url: null,
    });
    const old = "image_a00000000000000000000001";
    const recent = "image_a00000000000000000000002";
    const oldLive = "image_a00000000000000000000003";
    for (const [id, stage, createdAt] of [
      [old, "test", "2026-08-01T00:00:00.000Z"],
      [recent, "test", "2026-11-01T00:00:00.000Z"],
      [oldLive, "live", "2026-01-01T00:00:00.000Z"],
    ] as const) {
      await blobStore.put(`images/${id}.png`, new Uint8Array([1]), { contentType: "image/png" });
      await images.insert(record(id, stage, createdAt));
    }
    const url = await pipelineContext(pipeline).publisher!.publish({
      id: old,
      format: "png",
      blobKey: `images/${old}.png`,
    });
    await images.update(old, { url });
    const now = new Date("2026-11-22T00:00:00.000Z");
    const cutoff = new Date(now.getTime() - 90 * 24 * 60 * 60 * 1000);
    expect(
      await sweepExpiredTestImages(pipelineContext(pipeline), { createdBefore: cutoff, batchSize: 1 }),
    ).toBe(1);
    expect(await images.get(old)).toBeNull();
    expect(await blobStore.get(`images/${old}.png`)).toBeNull();
    expect(await publicStore.get(`images/${old}.png`)).toBeNull();
    expect(await images.get(recent)).not.toBeNull();
    expect(await images.get(oldLive)).not.toBeNull();
    expect(await sweepExpiredTestImages(pipelineContext(pipeline), { createdBefore: cutoff })).toBe(0);
  });
});
