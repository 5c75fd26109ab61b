import {
  ErrorCodes,
  type ImagePipelineError,
  isImagePipelineError,
  type ModelCallOptions,
  type ModelImage,
  type ModelProvider,
} from "@pixport/core";
import { describe, expect, it } from "vitest";
import { Colors, solidImage } from "../fixtures/images.js";
import { waitUntil } from "../wait.js";

/**
 * A failure the stand-in upstream plays on one call, in the upstream's own protocol (the adapter's
 * test translates each into a reply of its provider):
 * - `server-error`: the provider fails (an HTTP 5xx);
 * - `connection-lost`: the connection closes before an answer;
 * - `refused`: the provider refuses for a while (`rate-limit`, exhausted `quota`, or our `key`
 *   rejected), with its retry hint in seconds when it gives one;
 * - `rejected-input`: the provider refuses the input itself as invalid (an HTTP 400);
 * - `hang`: the call is accepted and never answered; `hang-body`: the answer starts and never ends;
 * - `malformed`: an answer that is not the protocol's format (not JSON);
 * - `empty`: a well-formed answer without content (no text, no image);
 * - `truncated`: an answer the provider cut off (a length limit).
 */
export type UpstreamFault =
  | { fault: "server-error" }
  | { fault: "connection-lost" }
  | { fault: "refused"; reason: "rate-limit" | "quota" | "key"; retryAfterSeconds?: number }
  | { fault: "rejected-input" }
  | { fault: "hang" }
  | { fault: "hang-body" }
  | { fault: "malformed" }
  | { fault: "empty" }
  | { fault: "truncated" };

/** One call the stand-in upstream received. */
export interface UpstreamCall<Received> {
  /** What the call carried, decoded by the adapter's test from the provider's request. */
  received: Received;
  /** Whether the adapter gave the call up before its answer ended (closed the connection). */
  abandoned: boolean;
}

/**
 * The stand-in provider behind the port under test (a loopback server speaking the provider's
 * protocol): the suite scripts it with the port's own terms and reads what reached it.
 */
export interface ModelUpstream<Received, Answer> {
  /** Answers every following call with `reply(received)`, until the next `answer`. */
  answer(reply: (received: Received) => Answer | UpstreamFault): void;
  /** The calls received since the test began, in order (live: reads see later calls). */
  calls(): readonly UpstreamCall<Received>[];
}

/** What `create` gives a model-port suite. */
export interface ModelPortTestContext<Port, Received, Answer> {
  /** The port under test, created with a short per-call timeout (about a second). */
  port: Port;
  /** A model of `port.models` whose calls reach `upstream`. */
  model: string;
  /** The stand-in provider behind `model`, with no call received yet. */
  upstream: ModelUpstream<Received, Answer>;
}

/** Options shared by the model-port suites. */
export interface ModelPortConformanceOptions<Port, Received, Answer> {
  name: string;
  /** A fresh port and stand-in upstream; called once per test. */
  create: () => Promise<ModelPortTestContext<Port, Received, Answer>>;
  /** Frees what `create` made (servers, clients). */
  cleanup?: (context: ModelPortTestContext<Port, Received, Answer>) => Promise<void>;
}

/** A red 40×20 JPEG, as the core hands to image ports. */
export async function conformanceModelImage(): Promise<ModelImage> {
  return {
    data: await solidImage(40, 20, Colors.red, "jpeg"),
    mimeType: "image/jpeg",
    width: 40,
    height: 20,
  };
}

/** The rejection of `promise`, which must be a pixport error. */
export async function modelFailure(promise: Promise<unknown>): Promise<ImagePipelineError> {
  const outcome = await promise.then(
    (value: unknown) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  );
  if (!("rejected" in outcome))
    throw new Error(`expected a rejection, got ${JSON.stringify(outcome.resolved)}`);
  const error = outcome.rejected;
  if (!isImagePipelineError(error)) throw new Error(`expected a pixport error, got ${String(error)}`);
  return error;
}

/** How the shared tests call one port: one call on `model` with `options`, resolving anything. */
export type ModelPortCall<Port> = (port: Port, model: string, options?: ModelCallOptions) => Promise<unknown>;

type WithContext<Port, Received, Answer> = (
  body: (context: ModelPortTestContext<Port, Received, Answer>) => Promise<void>,
) => () => Promise<void>;

/** Wraps a test body: a fresh context per test, cleaned up also when the test fails. */
export function contextRunner<Port, Received, Answer>(
  options: ModelPortConformanceOptions<Port, Received, Answer>,
): WithContext<Port, Received, Answer> {
  return (body) => async () => {
    const context = await options.create();
    try {
      await body(context);
    } finally {
      await options.cleanup?.(context);
    }
  };
}

/** What every model port declares: its model names, its default among them, its image side. */
export function describeModelDeclarations<Port extends Omit<ModelProvider, "maxImageSide">, R, A>(
  withContext: WithContext<Port, R, A>,
  imagePort: boolean,
): void {
  it(
    "declares its model names, a default among them and (image ports) a positive image side",
    withContext(async ({ port, model }) => {
      const models = [...port.models];
      expect(models.length).toBeGreaterThan(0);
      expect(models.every((name) => typeof name === "string" && name.trim() !== "")).toBe(true);
      expect(new Set(models).size, "no model name twice").toBe(models.length);
      expect(models).toContain(model);
      if (port.defaultModel !== undefined) expect(models).toContain(port.defaultModel);
      expect([undefined, true, false]).toContain((port as ModelProvider).lossless);
      const side = (port as ModelProvider).maxImageSide;
      if (!imagePort || side === undefined) return;
      for (const name of models) {
        const value = side.call(port, name);
        if (value !== undefined)
          expect(Number.isInteger(value) && value > 0, `maxImageSide(${name})`).toBe(true);
      }
    }),
  );
}

/**
 * The failures every model port maps the same way (the VisionModel TSDoc, which the other model
 * ports refer to): provider failures, refusals, timeouts and aborts become pixport errors with
 * the port's codes, and a call never outlives its timeout or its caller.
 */
export function describeUpstreamFaults<Port, Received, Answer>(
  withContext: WithContext<Port, Received, Answer>,
  call: ModelPortCall<Port>,
): void {
  describe("provider failures", () => {
    it.each([
      ["server-error", { fault: "server-error" }],
      ["connection-lost", { fault: "connection-lost" }],
      ["malformed", { fault: "malformed" }],
      ["empty", { fault: "empty" }],
      ["truncated", { fault: "truncated" }],
    ] as const)("answers MODEL_BAD_RESPONSE when the provider's answer is %s", async (_name, fault) => {
      await withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => fault);
        const error = await modelFailure(call(port, model));
        expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
        expect(upstream.calls().length, "the provider was called").toBeGreaterThan(0);
      })();
    });

    it.each(["rate-limit", "quota", "key"] as const)(
      "answers MODEL_UNAVAILABLE with the provider's retry hint when it refuses (%s)",
      async (reason) => {
        await withContext(async ({ port, model, upstream }) => {
          upstream.answer(() => ({ fault: "refused", reason, retryAfterSeconds: 17 }));
          const error = await modelFailure(call(port, model));
          expect(error.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
          expect(error.retryAfterSeconds).toBe(17);
        })();
      },
    );

    it(
      "answers MODEL_UNAVAILABLE with a retry time of its own when the provider refuses without one",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ fault: "refused", reason: "rate-limit" }));
        const error = await modelFailure(call(port, model));
        expect(error.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
        expect(Number.isInteger(error.retryAfterSeconds) && (error.retryAfterSeconds ?? 0) >= 1).toBe(true);
      }),
    );

    it(
      "answers VALIDATION_FAILED on `model` when the provider rejects the input",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ fault: "rejected-input" }));
        const error = await modelFailure(call(port, model));
        expect(error.code).toBe(ErrorCodes.VALIDATION_FAILED);
        expect(error.issues.map((issue) => issue.path)).toContain("model");
      }),
    );
  });
  describeDeadlines(withContext, call);
}

function describeDeadlines<Port, Received, Answer>(
  withContext: WithContext<Port, Received, Answer>,
  call: ModelPortCall<Port>,
): void {
  describe("timeouts and aborts", () => {
    it.each(["hang", "hang-body"] as const)(
      "answers MODEL_TIMEOUT when the provider does not finish (%s) and gives the call up",
      async (fault) => {
        await withContext(async ({ port, model, upstream }) => {
          upstream.answer(() => ({ fault }));
          const error = await modelFailure(call(port, model));
          expect(error.code).toBe(ErrorCodes.MODEL_TIMEOUT);
          await waitUntil(
            () => upstream.calls().length > 0 && upstream.calls().every((entry) => entry.abandoned),
            "the timed-out upstream call is given up",
          );
        })();
      },
    );

    it(
      "rejects a call whose signal is already aborted, without calling the provider",
      withContext(async ({ port, model, upstream }) => {
        const controller = new AbortController();
        controller.abort(new Error("client went away"));
        await modelFailure(call(port, model, { signal: controller.signal }));
        expect(upstream.calls()).toHaveLength(0);
      }),
    );

    it(
      "ends the provider's call and rejects when the caller aborts during it",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ fault: "hang" }));
        const controller = new AbortController();
        const pending = modelFailure(call(port, model, { signal: controller.signal }));
        await waitUntil(() => upstream.calls().length > 0, "the call reached the provider");
        controller.abort(new Error("client went away"));
        // Not the port's own timeout firing later: the abort ended the call.
        expect((await pending).code).not.toBe(ErrorCodes.MODEL_TIMEOUT);
        await waitUntil(() => upstream.calls()[0]?.abandoned === true, "the upstream call is given up");
      }),
    );
  });
}
