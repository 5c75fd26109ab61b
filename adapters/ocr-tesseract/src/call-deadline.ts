import { ErrorCodes, ImagePipelineError, type ModelCallOptions } from "@pixport/core";

/** One deadline for a whole extraction: pre-processing, the wait for a worker and recognition. */
export interface CallDeadline {
  /** Rejects with `MODEL_TIMEOUT` after `timeoutMs`, or with the signal's reason when it aborts. */
  readonly reached: Promise<never>;
  /**
   * Aborted with the same reason as `reached` rejects, in the same turn (so a call can see that its
   * deadline passed before its awaited promises run), for waits that take a signal.
   */
  readonly signal: AbortSignal;
  /** Stops the timer and the abort listener (the call ended). */
  clear(): void;
}

/** Starts the deadline of one call (see {@link CallDeadline}). */
export function startDeadline(timeoutMs: number, signal: AbortSignal | undefined): CallDeadline {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const passed = new AbortController();
  const reached = new Promise<never>((_, reject) => {
    const fail = (reason: unknown) => {
      passed.abort(reason);
      reject(reason);
    };
    timer = setTimeout(
      () =>
        fail(
          new ImagePipelineError(
            ErrorCodes.MODEL_TIMEOUT,
            `Text extraction took longer than ${timeoutMs} ms.`,
          ),
        ),
      timeoutMs,
    );
    onAbort = () => fail(signal?.reason ?? new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  // A call that ends before its deadline never awaits `reached`: its rejection is no unhandled error.
  reached.catch(() => undefined);
  return {
    reached,
    signal: passed.signal,
    clear() {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * `bytes` of the host's memory budget (the core's, when it gives one), waited for until
 * `deadline`; resolves with the function that hands them back. A reservation granted after the
 * call gave up is handed back at once.
 */
export async function reserveWithin(
  reserveMemory: ModelCallOptions["reserveMemory"],
  bytes: number,
  deadline: Promise<never>,
): Promise<() => void> {
  if (reserveMemory === undefined) return () => undefined;
  const reserving = reserveMemory(bytes);
  try {
    return await Promise.race([reserving, deadline]);
  } catch (error) {
    void reserving.then(
      (release) => release(),
      () => undefined,
    );
    throw error;
  }
}
