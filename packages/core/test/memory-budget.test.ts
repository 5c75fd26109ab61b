import { describe, expect, it } from "vitest";
import { isImagePipelineError } from "../src/index.js";
import { createMemoryBudget, estimateJobBytes } from "../src/policies/memory-budget.js";

const MB = 1024 * 1024;

describe("estimateJobBytes", () => {
  it("counts the input and the largest image the steps make, rotations and overlays included", () => {
    const tiny = { width: 64, height: 48 };
    const toHuge = estimateJobBytes(tiny, [
      {
        type: "resize",
        width: 10_000,
        height: 10_000,
        fit: "fill",
        position: "center",
        background: { r: 0, g: 0, b: 0, alpha: 0 },
      },
    ]);
    expect(toHuge).toBeGreaterThan(600 * MB);
    const square = { width: 7000, height: 7000 };
    const turned = estimateJobBytes(square, [
      { type: "rotate", angle: 45, background: { r: 0, g: 0, b: 0, alpha: 1 } },
    ]);
    const straight = estimateJobBytes(square, [
      { type: "rotate", angle: 90, background: { r: 0, g: 0, b: 0, alpha: 1 } },
    ]);
    expect(turned).toBeGreaterThan(straight);
    // A 10000 px overlay on a 64 x 48 base costs the base, not 10000 x 10000.
    const overlay = estimateJobBytes(tiny, [
      {
        type: "overlay",
        layers: [
          {
            input: new Uint8Array(),
            left: 0,
            top: 0,
            width: 10_000,
            height: 10_000,
            repeat: "repeat",
            opacity: 1,
          },
        ],
      },
    ]);
    expect(overlay).toBeLessThan(1 * MB);
    expect(estimateJobBytes(square, [], 10)).toBe(10 * estimateJobBytes(square, []));
  });
});

describe("createMemoryBudget", () => {
  it("admits jobs while they fit, queues the rest first come first served, and refuses what never fits", async () => {
    const budget = createMemoryBudget({ maxBytes: 100 * MB, maxWaitMs: 5_000 });
    const releaseA = await budget.reserve(60 * MB, "width");
    const order: string[] = [];
    const b = budget.reserve(50 * MB, "width").then((release) => {
      order.push("b");
      return release;
    });
    const c = budget.reserve(10 * MB, "width").then((release) => {
      order.push("c");
      return release;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // c would fit, but b came first: no overtaking, so a big job is not starved by small ones.
    expect(order).toEqual([]);
    expect(budget.stats()).toEqual({ reservedBytes: 60 * MB, waiting: 2, maxBytes: 100 * MB });
    releaseA();
    const [releaseB, releaseC] = await Promise.all([b, c]);
    expect(order).toEqual(["b", "c"]);
    expect(budget.stats().reservedBytes).toBe(60 * MB);
    releaseB();
    releaseC();
    releaseC();
    expect(budget.stats().reservedBytes).toBe(0);
    const never = await budget.reserve(101 * MB, "angle").catch((error: unknown) => error);
    expect(isImagePipelineError(never) && never.code).toBe("IMAGE_TOO_LARGE");
    expect(isImagePipelineError(never) && never.issues[0]?.path).toBe("angle");
  });

  it("refuses with OVERLOADED after maxWaitMs, and an aborted waiter leaves the queue", async () => {
    const budget = createMemoryBudget({ maxBytes: 20 * MB, maxWaitMs: 50 });
    const release = await budget.reserve(20 * MB, "image");
    const waited = await budget.reserve(1 * MB, "image").catch((error: unknown) => error);
    expect(isImagePipelineError(waited) && waited.code).toBe("OVERLOADED");
    expect(isImagePipelineError(waited) && waited.retryAfterSeconds).toBe(1);
    const controller = new AbortController();
    const aborted = budget.reserve(1 * MB, "image", controller.signal).catch((error: unknown) => error);
    controller.abort(new Error("client gone"));
    expect(String(await aborted)).toContain("client gone");
    expect(budget.stats().waiting).toBe(0);
    release();
  });

  it("calls onDrained once the budget stays empty for releaseAfterIdleMs, after a job of releaseAfterBytes or more", async () => {
    let drained = 0;
    const idle = () => new Promise((resolve) => setTimeout(resolve, 60));
    const budget = createMemoryBudget(
      { maxBytes: 100 * MB, maxWaitMs: 5_000, releaseAfterBytes: 10 * MB, releaseAfterIdleMs: 20 },
      () => {
        drained += 1;
      },
    );
    // Small jobs alone never release.
    (await budget.reserve(9 * MB, "image"))();
    await idle();
    expect(drained).toBe(0);
    // A large job and a small one overlapping: released once, after the second of them ends.
    const large = await budget.reserve(60 * MB, "image");
    const small = await budget.reserve(5 * MB, "image");
    large();
    await idle();
    expect(drained).toBe(0);
    small();
    expect(drained).toBe(0); // not at once: the budget must stay empty first
    await idle();
    expect(drained).toBe(1);
    // A job reserving within the idle time puts the release off until the budget is empty again.
    (await budget.reserve(20 * MB, "image"))();
    const soon = await budget.reserve(1 * MB, "image");
    await idle();
    expect(drained).toBe(1);
    soon();
    await idle();
    expect(drained).toBe(2);
    // A job waiting for room keeps the budget from draining when the running one ends.
    const first = await budget.reserve(80 * MB, "image");
    const waiting = budget.reserve(30 * MB, "image");
    first();
    const second = await waiting;
    await idle();
    expect(drained).toBe(2);
    second();
    await idle();
    expect(drained).toBe(3);
    // The large jobs were counted once: the next small job alone does not release again.
    (await budget.reserve(1 * MB, "image"))();
    await idle();
    expect(drained).toBe(3);
  });

  it("releases as soon as the budget is empty after a large job held releaseAfterJobMs, not after a wait in the queue", async () => {
    let drained = 0;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const budget = createMemoryBudget(
      {
        maxBytes: 100 * MB,
        maxWaitMs: 5_000,
        releaseAfterBytes: 10 * MB,
        releaseAfterIdleMs: 1_000,
        releaseAfterJobMs: 40,
      },
      () => {
        drained += 1;
      },
    );
    // A large job held 60 ms: released in the same turn as it ends.
    const long = await budget.reserve(20 * MB, "image");
    await sleep(60);
    long();
    expect(drained).toBe(1);
    // A large short job waits for the idle time (1 s here): nothing yet.
    (await budget.reserve(20 * MB, "image"))();
    expect(drained).toBe(1);
    // A small job held long is not a reason to release; the large short one still waits.
    const smallLong = await budget.reserve(1 * MB, "image");
    await sleep(60);
    smallLong();
    expect(drained).toBe(1);
    // A large job that waited 60 ms in the queue and then ran at once is a short job.
    const blocker = await budget.reserve(90 * MB, "image");
    const queued = budget.reserve(20 * MB, "image");
    await sleep(60);
    blocker(); // held 60 ms, but 90 MB of it ends while the queued job starts: the budget is not empty
    expect(drained).toBe(1);
    (await queued)();
    // Empty now, and a long large job (the blocker) ended since the last release: released at once.
    expect(drained).toBe(2);
    const waited = budget.reserve(20 * MB, "image");
    (await waited)();
    expect(drained).toBe(2);
  });
});
