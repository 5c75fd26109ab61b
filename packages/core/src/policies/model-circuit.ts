import { z } from "zod";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../errors.js";
import type { Clock } from "../ports/clock.js";
import type { ModelPorts } from "../ports/models.js";

/**
 * Circuit breaker of the model-backed operations, per node and per model: after
 * `failureThreshold` provider failures in a row (`MODEL_BAD_RESPONSE`, `MODEL_TIMEOUT`,
 * `MODEL_UNAVAILABLE`; a call the caller aborted does not count) the model's calls fail fast with
 * `MODEL_UNAVAILABLE` and `Retry-After` for `cooldownMs`, instead of each waiting for the model
 * deadline. Then one probe call goes through: success closes the circuit, failure opens it again.
 * `false` turns it off.
 */
export const modelCircuitOptionsSchema = z.union([
  z.literal(false),
  z
    .object({
      /** Provider failures in a row that open the circuit. @default 5 */
      failureThreshold: z.number().int().min(1).max(1000).default(5),
      /** How long an open circuit refuses calls before a probe, ms. @default 30000 */
      cooldownMs: z.number().int().min(1).max(3_600_000).default(30_000),
    })
    .strict(),
]);

export type ModelCircuitOptions = z.output<typeof modelCircuitOptionsSchema>;

const PROVIDER_FAILURES: ReadonlySet<string> = new Set([
  ErrorCodes.MODEL_BAD_RESPONSE,
  ErrorCodes.MODEL_TIMEOUT,
  ErrorCodes.MODEL_UNAVAILABLE,
]);

interface CircuitState {
  failures: number;
  /** Epoch ms until which calls are refused; 0 = closed. */
  openUntil: number;
  probing: boolean;
}

/** The state of one model's circuit, for tests and metrics. */
export type CircuitStatus = "closed" | "open" | "half-open";

export interface ModelCircuitBreaker {
  /** Runs `call` for `key` (e.g. `vision:llava`) unless its circuit is open. */
  run<T>(key: string, call: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  status(key: string): CircuitStatus;
  /** Every circuit used so far (`{kind}:{model}`) with its status, for metrics. */
  list(): { key: string; status: CircuitStatus }[];
}

/** Creates the breaker of {@link modelCircuitOptionsSchema} (enabled options). */
export function createModelCircuitBreaker(
  options: Exclude<ModelCircuitOptions, false>,
  clock: Clock,
): ModelCircuitBreaker {
  const circuits = new Map<string, CircuitState>();
  const stateOf = (key: string) => {
    let state = circuits.get(key);
    if (state === undefined) {
      state = { failures: 0, openUntil: 0, probing: false };
      circuits.set(key, state);
    }
    return state;
  };
  const refuse = (key: string, retryAfterMs: number) =>
    new ImagePipelineError(
      ErrorCodes.MODEL_UNAVAILABLE,
      `The model ${key.split(":").slice(1).join(":")} failed ${options.failureThreshold} times in a row; calls to it are paused. Retry later.`,
      { retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) },
    );

  return {
    list() {
      return [...circuits.keys()].map((key) => ({ key, status: this.status(key) }));
    },
    status(key) {
      const state = circuits.get(key);
      if (state === undefined || state.openUntil === 0) return "closed";
      return clock.now().getTime() < state.openUntil ? "open" : "half-open";
    },
    async run(key, call, signal) {
      const state = stateOf(key);
      let probe = false;
      if (state.openUntil !== 0) {
        const remaining = state.openUntil - clock.now().getTime();
        if (remaining > 0) throw refuse(key, remaining);
        // Half-open: one probe at a time; the others are refused until it ends.
        if (state.probing) throw refuse(key, 1000);
        state.probing = true;
        probe = true;
      }
      try {
        const result = await call();
        state.failures = 0;
        state.openUntil = 0;
        return result;
      } catch (error) {
        const providerFailure =
          signal?.aborted !== true && isImagePipelineError(error) && PROVIDER_FAILURES.has(error.code);
        if (providerFailure) {
          state.failures += 1;
          if (probe || state.failures >= options.failureThreshold) {
            state.openUntil = clock.now().getTime() + options.cooldownMs;
          }
        }
        throw error;
      } finally {
        if (probe) state.probing = false;
      }
    },
  };
}

/**
 * `models` with every call going through `breaker`, keyed by port and model name. The ports'
 * other members (`models`, `defaultModel`, ...) read through to the originals.
 */
export function guardModelPorts(models: ModelPorts, breaker: ModelCircuitBreaker): ModelPorts {
  const guard = <P extends object>(
    port: P | undefined,
    kind: string,
    method: keyof P & string,
  ): P | undefined => {
    if (port === undefined) return undefined;
    const original = port[method] as unknown as (
      request: { model: string },
      options?: { signal?: AbortSignal },
    ) => Promise<unknown>;
    const guarded = Object.create(port) as P;
    Object.defineProperty(guarded, method, {
      value: (request: { model: string }, options?: { signal?: AbortSignal }) =>
        breaker.run(`${kind}:${request.model}`, () => original.call(port, request, options), options?.signal),
    });
    return guarded;
  };
  return {
    vision: guard(models.vision, "vision", "describe"),
    generator: guard(models.generator, "generator", "generate"),
    classifier: guard(models.classifier, "classifier", "classify"),
    textExtractor: guard(models.textExtractor, "textExtractor", "extract"),
  };
}
