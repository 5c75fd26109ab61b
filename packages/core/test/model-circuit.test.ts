import { describe, expect, it } from "vitest";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../src/errors.js";
import { createModelCircuitBreaker, guardModelPorts } from "../src/policies/model-circuit.js";
import type { VisionModel } from "../src/ports/vision-model.js";

function manualClock(start = Date.UTC(2026, 10, 22)) {
  let now = start;
  return { now: () => new Date(now), advance: (ms: number) => (now += ms) };
}

const failure = (code: string) => new ImagePipelineError(code as never, "upstream trouble");

/** A vision model whose next answers are scripted: a string or an error. */
function scriptedVision() {
  const script: Array<string | Error> = [];
  let calls = 0;
  const model: VisionModel = {
    models: ["llava", "gemini"],
    defaultModel: "llava",
    async describe() {
      calls += 1;
      const next = script.shift() ?? "fine";
      if (next instanceof Error) throw next;
      return next;
    },
  };
  return { model, script, calls: () => calls };
}

const image = { data: new Uint8Array([1]), mimeType: "image/jpeg" as const, width: 1, height: 1 };

async function outcome(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    (value) => `ok:${String(value)}`,
    (error: unknown) => (isImagePipelineError(error) ? error.code : `other:${String(error)}`),
  );
}

describe("model circuit breaker", () => {
  it("opens after failureThreshold provider failures in a row, fails fast with Retry-After, probes after the cooldown", async () => {
    const clock = manualClock();
    const vision = scriptedVision();
    const breaker = createModelCircuitBreaker({ failureThreshold: 3, cooldownMs: 10_000 }, clock);
    const guarded = guardModelPorts({ vision: vision.model }, breaker).vision!;
    const ask = () => outcome(guarded.describe({ model: "llava", image, prompt: "?" }));
    // Members other than the guarded method read through.
    expect(guarded.models).toEqual(["llava", "gemini"]);
    expect(guarded.defaultModel).toBe("llava");

    vision.script.push(
      failure(ErrorCodes.MODEL_TIMEOUT),
      failure(ErrorCodes.MODEL_BAD_RESPONSE),
      "recovered",
    );
    expect([await ask(), await ask(), await ask()]).toEqual([
      "MODEL_TIMEOUT",
      "MODEL_BAD_RESPONSE",
      "ok:recovered",
    ]);
    expect(breaker.status("vision:llava")).toBe("closed");

    vision.script.push(...[1, 2, 3].map(() => failure(ErrorCodes.MODEL_UNAVAILABLE)));
    expect([await ask(), await ask(), await ask()]).toEqual(Array(3).fill("MODEL_UNAVAILABLE"));
    expect(breaker.status("vision:llava")).toBe("open");
    const callsWhenOpened = vision.calls();
    const refused = await guarded
      .describe({ model: "llava", image, prompt: "?" })
      .catch((error: unknown) => error);
    expect(isImagePipelineError(refused) && refused.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
    expect((refused as ImagePipelineError).retryAfterSeconds).toBe(10);
    expect((refused as Error).message).toContain("llava");
    expect(vision.calls()).toBe(callsWhenOpened);
    // Another model of the same port has its own circuit.
    expect(await outcome(guarded.describe({ model: "gemini", image, prompt: "?" }))).toBe("ok:fine");

    clock.advance(9_000);
    expect(
      ((await guarded.describe({ model: "llava", image, prompt: "?" }).catch((e) => e)) as ImagePipelineError)
        .retryAfterSeconds,
    ).toBe(1);
    clock.advance(1_000);
    expect(breaker.status("vision:llava")).toBe("half-open");
    // A failed probe opens it again for a full cooldown.
    vision.script.push(failure(ErrorCodes.MODEL_BAD_RESPONSE));
    expect(await ask()).toBe("MODEL_BAD_RESPONSE");
    expect(breaker.status("vision:llava")).toBe("open");
    clock.advance(10_000);
    // A successful probe closes it.
    expect(await ask()).toBe("ok:fine");
    expect(breaker.status("vision:llava")).toBe("closed");
  });

  it("lets one probe through at a time in half-open state", async () => {
    const clock = manualClock();
    const breaker = createModelCircuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 }, clock);
    await outcome(breaker.run("vision:x", () => Promise.reject(failure(ErrorCodes.MODEL_TIMEOUT))));
    clock.advance(1_000);
    let finishProbe!: (value: string) => void;
    const probe = breaker.run("vision:x", () => new Promise<string>((resolve) => (finishProbe = resolve)));
    expect(await outcome(breaker.run("vision:x", async () => "second"))).toBe("MODEL_UNAVAILABLE");
    finishProbe("probe ok");
    expect(await probe).toBe("probe ok");
    expect(await outcome(breaker.run("vision:x", async () => "after"))).toBe("ok:after");
  });

  it("does not count caller aborts, validation-type errors or unexpected errors", async () => {
    const clock = manualClock();
    const breaker = createModelCircuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 }, clock);
    const aborted = AbortSignal.abort();
    await outcome(breaker.run("k:m", () => Promise.reject(failure(ErrorCodes.MODEL_BAD_RESPONSE)), aborted));
    await outcome(breaker.run("k:m", () => Promise.reject(failure(ErrorCodes.VALIDATION_FAILED))));
    await outcome(breaker.run("k:m", () => Promise.reject(new Error("bug"))));
    expect(breaker.status("k:m")).toBe("closed");
    expect(await outcome(breaker.run("k:m", async () => "still closed"))).toBe("ok:still closed");
  });
});
