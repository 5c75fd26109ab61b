import { afterEach, describe, expect, it, vi } from "vitest";
import type { PipelineContext } from "../src/operations/context.js";
import { createFactsScheduler } from "../src/operations/image-facts.js";

describe("createFactsScheduler", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("stop() ends a pause while the node is busy without waiting for its timer", async () => {
    // The pauses' timers are unref'd: a stop that waited for one could see the event loop run dry
    // first, and the process exit in the middle of its shutdown. With fake timers, a stop that
    // needs the 50 ms pause to fire never settles while less time passes.
    vi.useFakeTimers();
    const context = { codec: { sample: async () => undefined } } as unknown as PipelineContext;
    let checks = 0;
    const scheduler = createFactsScheduler(context, () => {
      checks += 1;
      return true; // always busy: the runner pauses
    });
    scheduler.schedule({ id: "image_1" } as never);
    await vi.advanceTimersByTimeAsync(1); // the runner starts, finds the node busy and pauses
    expect(checks).toBe(1);
    let stopped = false;
    void scheduler.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(1);
    expect(stopped).toBe(true);
    expect(checks).toBe(1); // it did not look again: nothing was left to do
  });
});
