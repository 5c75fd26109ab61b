import { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "../errors.js";
import { type Release, Semaphore } from "../semaphore.js";

/**
 * Back-pressure of one pipeline (one node): at most `maxActive` image jobs run at once, at most
 * `maxQueued` more wait in a first-in, first-out queue, and none waits longer than `maxWaitMs`.
 * Anything beyond is refused at once with `OVERLOADED` (HTTP 503 with `Retry-After`), before any
 * quota is reserved, so an overloaded node answers fast instead of piling up decoded images.
 */
export const workQueueOptionsSchema = z
  .object({
    /** Jobs running at once. @default 8 */
    maxActive: z.number().int().min(1).max(10_000).default(8),
    /** Jobs waiting for a slot; 0 refuses everything beyond `maxActive`. @default 32 */
    maxQueued: z.number().int().min(0).max(100_000).default(32),
    /** Longest wait for a slot (ms); a job still waiting is refused with `OVERLOADED`. @default 10000 */
    maxWaitMs: z.number().int().min(1).max(600_000).default(10_000),
  })
  .strict();

export type WorkQueueOptions = z.output<typeof workQueueOptionsSchema>;

/** Load of a {@link WorkGate} right now. */
export interface WorkGateStats {
  active: number;
  queued: number;
}

/** See {@link workQueueOptionsSchema}. */
export interface WorkGate {
  /**
   * Runs `job` in a slot, or rejects with `OVERLOADED` when the node is full. A job whose `signal`
   * aborts while it waits leaves the queue and rejects with the signal's reason, never running.
   */
  run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Throws the `OVERLOADED` that `run` would reject with right now, if it would. */
  assertRoom(): void;
  /**
   * Holds one place (counted like a waiting job) until the returned release is called, or throws
   * `OVERLOADED` when there is none. A server holds it while it looks up a request's key, so
   * requests arriving together cannot all pass the check and then be refused, slowly, after
   * their look-ups; the holder releases it just before its job is run.
   */
  hold(): () => void;
  stats(): WorkGateStats;
}

function overloaded(message: string, retryAfterSeconds: number): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.OVERLOADED, message, { retryAfterSeconds });
}

/** Creates the gate of {@link workQueueOptionsSchema}: a {@link Semaphore} of `maxActive` slots. */
export function createWorkGate(options: WorkQueueOptions): WorkGate {
  // A refused client retries after about the time one slot takes to free up; 1 s at least.
  const retryAfter = Math.max(1, Math.ceil(options.maxWaitMs / 1000 / Math.max(1, options.maxActive)));
  const full = () =>
    overloaded(
      `The server is at capacity (${options.maxActive} jobs running, ${slots.waiting} waiting); retry later.`,
      retryAfter,
    );
  const slots: Semaphore = new Semaphore({
    capacity: options.maxActive,
    maxWaiting: options.maxQueued,
    maxWaitMs: options.maxWaitMs,
    full,
    timedOut: () =>
      overloaded(`The job waited ${options.maxWaitMs} ms for a free slot; retry later.`, retryAfter),
  });
  // Places are slots and queue places together; held ones count as taken, so a holder that
  // releases and runs finds its place free.
  const places = options.maxActive + options.maxQueued;
  let held = 0;
  const noRoom = () => slots.held + slots.waiting + held >= places;
  const execute = async <T>(job: () => Promise<T>, release: Release): Promise<T> => {
    try {
      return await job();
    } finally {
      release();
    }
  };

  return {
    stats: () => ({ active: slots.held, queued: slots.waiting }),
    assertRoom() {
      if (noRoom()) throw full();
    },
    hold() {
      if (noRoom()) throw full();
      held += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held -= 1;
      };
    },
    run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (noRoom()) return Promise.reject(full());
      // A free slot starts the job in this call; otherwise it waits its turn.
      const release = slots.tryAcquire();
      if (release !== null) return execute(job, release);
      return slots.acquire({ signal }).then((granted) => execute(job, granted));
    },
  };
}
