import { afterEach, describe, expect, it, vi } from "vitest";
import { ErrorCodes, isImagePipelineError } from "../src/errors.js";
import { createWorkGate, workQueueOptionsSchema } from "../src/policies/work-gate.js";

/** A job that runs until released. */
function latch<T>(value: T) {
  let release!: () => void;
  const done = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started = false;
  return {
    job: async () => {
      started = true;
      await done;
      return value;
    },
    release: () => release(),
    get started() {
      return started;
    },
  };
}

async function rejection(promise: Promise<unknown>) {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

afterEach(() => {
  vi.useRealTimers();
});

describe("createWorkGate", () => {
  it("runs maxActive jobs, queues maxQueued in order, refuses the rest at once with OVERLOADED", async () => {
    const gate = createWorkGate({ maxActive: 2, maxQueued: 2, maxWaitMs: 60_000 });
    const jobs = [1, 2, 3, 4].map((value) => latch(value));
    const results = jobs.map((entry) => gate.run(entry.job));
    expect(jobs.map((entry) => entry.started)).toEqual([true, true, false, false]);
    expect(gate.stats()).toEqual({ active: 2, queued: 2 });
    const refused = await rejection(gate.run(async () => 5));
    expect(isImagePipelineError(refused) && refused.code).toBe(ErrorCodes.OVERLOADED);
    expect((refused as { retryAfterSeconds?: number }).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // Finishing the second job starts the first queued one (FIFO), not the later one.
    jobs[1]!.release();
    expect(await results[1]).toBe(2);
    expect(jobs.map((entry) => entry.started)).toEqual([true, true, true, false]);
    for (const entry of jobs) entry.release();
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4]);
    expect(gate.stats()).toEqual({ active: 0, queued: 0 });
  });

  it("holds places like waiting jobs: one beyond them is refused at once, a released one is free again", async () => {
    const gate = createWorkGate({ maxActive: 1, maxQueued: 1, maxWaitMs: 60_000 });
    const first = gate.hold();
    const second = gate.hold();
    const refused = (() => {
      try {
        gate.hold();
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(isImagePipelineError(refused) && refused.code).toBe(ErrorCodes.OVERLOADED);
    expect(() => gate.assertRoom()).toThrow(/capacity/);
    // A job of neither holder finds no place while both are held, not even the idle slot.
    expect(isImagePipelineError(await rejection(gate.run(async () => "x")))).toBe(true);
    // The holders release just before they run: each finds the place it held.
    first();
    first();
    const running = latch("a");
    const started = gate.run(running.job);
    expect(running.started).toBe(true);
    expect(isImagePipelineError(await rejection(gate.run(async () => "b")))).toBe(true);
    second();
    const queued = gate.run(async () => "c");
    expect(gate.stats()).toEqual({ active: 1, queued: 1 });
    running.release();
    expect(await Promise.all([started, queued])).toEqual(["a", "c"]);
    gate.assertRoom();
    expect(gate.stats()).toEqual({ active: 0, queued: 0 });
  });

  it("frees the slot of a job that fails, and passes its error through", async () => {
    const gate = createWorkGate({ maxActive: 1, maxQueued: 0, maxWaitMs: 1000 });
    await expect(gate.run(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(gate.stats()).toEqual({ active: 0, queued: 0 });
    expect(await gate.run(async () => "next")).toBe("next");
  });

  it("maxQueued 0 refuses everything beyond the running jobs", async () => {
    const gate = createWorkGate({ maxActive: 1, maxQueued: 0, maxWaitMs: 1000 });
    const running = latch("a");
    const first = gate.run(running.job);
    const refused = await rejection(gate.run(async () => "b"));
    expect(isImagePipelineError(refused) && refused.code).toBe(ErrorCodes.OVERLOADED);
    running.release();
    expect(await first).toBe("a");
  });

  it("refuses a job that waited maxWaitMs, which then never runs", async () => {
    vi.useFakeTimers();
    const gate = createWorkGate({ maxActive: 1, maxQueued: 5, maxWaitMs: 2000 });
    const running = latch("a");
    const first = gate.run(running.job);
    let ranLate = false;
    const waiting = rejection(
      gate.run(async () => {
        ranLate = true;
      }),
    );
    expect(gate.stats()).toEqual({ active: 1, queued: 1 });
    await vi.advanceTimersByTimeAsync(1999);
    expect(gate.stats().queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    const error = await waiting;
    expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.OVERLOADED);
    expect(gate.stats()).toEqual({ active: 1, queued: 0 });
    running.release();
    expect(await first).toBe("a");
    expect(ranLate).toBe(false);
  });

  it("drops a waiting job whose signal aborts, with the signal's reason; an aborted signal never queues", async () => {
    const gate = createWorkGate({ maxActive: 1, maxQueued: 5, maxWaitMs: 60_000 });
    const running = latch("a");
    const first = gate.run(running.job);
    const client = new AbortController();
    let ran = false;
    const waiting = rejection(
      gate.run(async () => {
        ran = true;
      }, client.signal),
    );
    expect(gate.stats()).toEqual({ active: 1, queued: 1 });
    client.abort(new Error("client gone"));
    expect(((await waiting) as Error).message).toBe("client gone");
    expect(gate.stats()).toEqual({ active: 1, queued: 0 });
    const late = await rejection(gate.run(async () => "never", AbortSignal.abort(new Error("already gone"))));
    expect((late as Error).message).toBe("already gone");
    running.release();
    expect(await first).toBe("a");
    expect(ran).toBe(false);
  });

  it("validates its options and fills the defaults", () => {
    expect(workQueueOptionsSchema.parse({})).toEqual({ maxActive: 8, maxQueued: 32, maxWaitMs: 10_000 });
    expect(workQueueOptionsSchema.safeParse({ maxActive: 0 }).success).toBe(false);
    expect(workQueueOptionsSchema.safeParse({ maxQueued: -1 }).success).toBe(false);
    expect(workQueueOptionsSchema.safeParse({ extra: 1 }).success).toBe(false);
  });
});
