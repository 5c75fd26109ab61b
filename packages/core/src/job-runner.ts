import type { Caller } from "./operations/context.js";
import type { Cancellable } from "./operations/inputs.js";
import type { RunnerKind } from "./operations/table.js";
import { type PolicyContext, withQuota } from "./policies/limits-policy.js";
import type { WorkGate } from "./policies/work-gate.js";

/** How long the node stays without billable operations before it counts as idle, ms. */
export const QUIET_MS = 250;

/** A call of an operation on its caller's input. */
export type OperationCall<I, O> = (caller: Caller, input: I) => Promise<O>;

/** Runs operations the way their table row says: through the work gate, the quota, or neither. */
export interface JobRunner {
  /** Wraps a call in its runner: `gated` (a gate slot, then the quota), `billed` (the quota), `free`. */
  wrap<I, O>(row: { runner: RunnerKind; billing?: number }, call: OperationCall<I, O>): OperationCall<I, O>;
  /**
   * Whether billable work is running or ended less than {@link QUIET_MS} ago (background work
   * waits): a client sending one request after another leaves gaps of a few ms, and work started
   * in such a gap runs beside its next request.
   */
  busy(): boolean;
}

/**
 * The runner of a pipeline's operations over its quota policy and (optional) work gate. Billable
 * operations running now are counted, gated or not (an embedded OCR or ONNX model works on this
 * node's CPU without a slot of the gate), for {@link JobRunner.busy}.
 */
export function createJobRunner(policy: PolicyContext, gate: WorkGate | undefined): JobRunner {
  let inFlight = 0;
  let lastEnded = Number.NEGATIVE_INFINITY;

  /** Wraps a billable operation in the monthly quota (reserve first, give back on failure). */
  const billed =
    <I, O>(units: number, call: OperationCall<I, O>): OperationCall<I, O> =>
    async (caller, input) => {
      inFlight += 1;
      try {
        return await withQuota(policy, caller, units, () => call(caller, input));
      } finally {
        inFlight -= 1;
        lastEnded = Date.now();
      }
    };

  return {
    wrap<I, O>(row: { runner: RunnerKind; billing?: number }, call: OperationCall<I, O>) {
      // Free operations still answer with a rejected promise (never a synchronous throw) when
      // their input fails validation.
      if (row.runner === "free") return async (caller: Caller, input: I) => call(caller, input);
      const inner = billed(row.billing ?? 0, call);
      if (row.runner === "billed" || gate === undefined) return inner;
      return (caller: Caller, input: I) =>
        gate.run(() => inner(caller, input), (input as Cancellable | undefined)?.signal);
    },
    busy: () => inFlight > 0 || (gate?.stats().active ?? 0) > 0 || Date.now() - lastEnded < QUIET_MS,
  };
}
