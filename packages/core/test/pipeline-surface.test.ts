import { describe, expect, expectTypeOf, it } from "vitest";
import {
  type AccountUsage,
  createImagePipeline,
  createMemoryAccountStore,
  createMemoryQuotaStore,
  type ImageCodec,
  type ImagePipeline,
  type ImagePipelineOptions,
} from "../src/index.js";
import { pipelineContext } from "../src/internal.js";
import { variantsPeriod } from "../src/pipeline.js";
import { quotaPeriod } from "../src/policies/limits-policy.js";
import { memoryDeps } from "./memory-deps.js";

/** A codec that is never called: these tests do no image work. */
const codec: ImageCodec = {
  name: "unreachable",
  capabilities: { inputFormats: ["png"], outputFormats: ["png"], steps: [] },
  probe: () => Promise.reject(new Error("probe must not be called")),
  transform: () => Promise.reject(new Error("transform must not be called")),
};

function pipelineWith(options: ImagePipelineOptions = {}) {
  const accounts = createMemoryAccountStore();
  const quota = createMemoryQuotaStore();
  const pipeline = createImagePipeline(memoryDeps(codec, { accounts, quota }), options);
  return { pipeline, accounts, quota };
}

describe("the pipeline's narrow surface (instead of its context)", () => {
  it("limits: what the pipeline enforces, from its options", () => {
    const { pipeline } = pipelineWith({ limits: { maxUploadBytes: 1234, maxFrames: 7 } });
    expect(pipeline.limits.maxUploadBytes).toBe(1234);
    expect(pipeline.limits.maxFrames).toBe(7);
    expectTypeOf(pipeline.limits).toHaveProperty("maxInputPixels");
  });

  it("usage(): billed images against the trial cap, uncapped once upgraded, and variants, per month", async () => {
    const { pipeline, accounts, quota } = pipelineWith({ policies: { trialImagesPerMonth: 25 } });
    const now = new Date();
    await quota.reserve({ accountId: "a", period: quotaPeriod(now), units: 3, limit: 25 });
    await quota.reserve({
      accountId: "a",
      period: variantsPeriod(now),
      units: 2,
      limit: Number.MAX_SAFE_INTEGER,
    });
    await quota.reserve({ accountId: "b", period: quotaPeriod(now), units: 9, limit: 25 });
    expect(await pipeline.usage("a")).toEqual<AccountUsage>({
      period: quotaPeriod(now),
      images: 3,
      limit: 25,
      variants: 2,
    });
    await accounts.setUpgraded("a", true);
    expect((await pipeline.usage("a")).limit).toBeNull();
    const lastYear = new Date(now.getTime() - 366 * 24 * 60 * 60 * 1000);
    expect(await pipeline.usage("a", lastYear)).toMatchObject({ period: quotaPeriod(lastYear), images: 0 });
  });

  it("memory(): the budget's state, or null without one", () => {
    expect(pipelineWith().pipeline.memory()).toBeNull();
    const { pipeline } = pipelineWith({ memoryBudget: { maxBytes: 64 * 1024 * 1024 } });
    expect(pipeline.memory()).toEqual({ reservedBytes: 0, waiting: 0, maxBytes: 64 * 1024 * 1024 });
  });

  it("the context is reachable only through @pixport/core/internal", () => {
    const { pipeline } = pipelineWith();
    expect(pipelineContext(pipeline).limits).toBe(pipeline.limits);
    expect(() => pipelineContext({} as ImagePipeline)).toThrow(/createImagePipeline/);
    // @ts-expect-error `context` is not part of ImagePipeline
    expect(pipeline.context).toBeUndefined();
  });
});
