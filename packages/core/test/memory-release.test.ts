import { describe, expect, it } from "vitest";
import { createImagePipeline, type ImageCodec, type MemoryReleaser } from "../src/index.js";
import { estimateJobBytes } from "../src/policies/memory-budget.js";
import { fake, live, sizeOf } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

// The pipeline gives the allocator's free memory back (its MemoryReleaser) when the memory budget
// drains after a large job, and the background facts of a new image are a job of the budget too.

function setup(options: { sampleGate?: Promise<void>; releaseAfterBytes?: number } = {}) {
  const codec: ImageCodec = {
    name: "fake",
    capabilities: { inputFormats: ["png"], outputFormats: ["png", "jpeg", "webp"], steps: [] },
    probe: async (input) => ({ format: "png", ...sizeOf(input) }),
    transform: async (request) => ({ data: request.input, format: "png", ...sizeOf(request.input) }),
    sample: async () => {
      await options.sampleGate;
      samples += 1;
      return { width: 1, height: 1, data: new Uint8Array([1, 2, 3, 255]), hasAlpha: false, frames: 1 };
    },
  };
  let samples = 0;
  let releases = 0;
  const memoryReleaser: MemoryReleaser = {
    allocator: "test",
    release: async () => {
      releases += 1;
    },
  };
  const pipeline = createImagePipeline(memoryDeps(codec, { memoryReleaser }), {
    backgroundFacts: true,
    workQueue: {},
    memoryBudget: {
      maxBytes: 1024 * 1024 * 1024,
      ...(options.releaseAfterBytes === undefined ? {} : { releaseAfterBytes: options.releaseAfterBytes }),
    },
  });
  return { pipeline, releases: () => releases, samples: () => samples };
}

describe("the memory budget's release of free memory", () => {
  it("releases after a large upload, and again after its facts", async () => {
    const { pipeline, releases, samples } = setup();
    await pipeline.uploadImage(live, { name: "page", image: fake(2000, 2000) });
    // Not at once: after the budget has stayed empty for releaseAfterIdleMs (100 ms).
    expect(releases()).toBe(0);
    await expect.poll(releases).toBeGreaterThanOrEqual(1);
    await expect.poll(samples).toBe(1);
    await expect.poll(releases).toBe(2);
  });

  it("does not release after small jobs, nor for a large one below releaseAfterBytes", async () => {
    const small = setup();
    await small.pipeline.uploadImage(live, { name: "icon", image: fake(100, 100) });
    await expect.poll(small.samples).toBe(1);
    expect(small.releases()).toBe(0);
    const raised = setup({
      releaseAfterBytes: estimateJobBytes({ width: 2000, height: 2000 }, [], 1, "png") + 1,
    });
    await raised.pipeline.uploadImage(live, { name: "page", image: fake(2000, 2000) });
    await expect.poll(raised.samples).toBe(1);
    expect(raised.releases()).toBe(0);
  });

  it("counts a new image's facts against the budget while they are computed", async () => {
    let open: () => void = () => undefined;
    const sampleGate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { pipeline, samples } = setup({ sampleGate });
    await pipeline.uploadImage(live, { name: "page", image: fake(1500, 1000) });
    await expect
      .poll(() => pipeline.memory()?.reservedBytes)
      .toBe(estimateJobBytes({ width: 1500, height: 1000 }, []));
    open();
    await expect.poll(samples).toBe(1);
    await expect.poll(() => pipeline.memory()?.reservedBytes).toBe(0);
  });

  it("keeps jobs and the process whole when a releaser breaks its contract (throws or rejects)", async () => {
    const codec: ImageCodec = {
      name: "fake",
      capabilities: { inputFormats: ["png"], outputFormats: ["png", "jpeg", "webp"], steps: [] },
      probe: async (input) => ({ format: "png", ...sizeOf(input) }),
      transform: async (request) => ({ data: request.input, format: "png", ...sizeOf(request.input) }),
    };
    for (const broken of [
      () => {
        throw new Error("thrown");
      },
      () => Promise.reject(new Error("rejected")),
    ]) {
      const warnings: string[] = [];
      const pipeline = createImagePipeline(
        memoryDeps(codec, {
          memoryReleaser: { allocator: "broken", release: broken as () => Promise<void> },
          logger: { warn: (message, fields) => void warnings.push(`${message} ${fields?.error}`) },
        }),
        // A job of 250 ms or more is followed by the release at once: none is that long here, so
        // the release comes after the idle wait (20 ms).
        { workQueue: {}, memoryBudget: { maxBytes: 1024 * 1024 * 1024, releaseAfterIdleMs: 20 } },
      );
      const image = await pipeline.uploadImage(live, { name: "page", image: fake(2000, 2000) });
      expect(image.width).toBe(2000);
      await expect
        .poll(() => warnings)
        .toEqual([expect.stringMatching(/^the memory releaser failed Error: (thrown|rejected)$/)]);
    }
  });
});
