/** Limits and refusals of a {@link Semaphore}. */
export interface SemaphoreOptions {
  /** Units that may be held at once (slots, or bytes). */
  capacity: number;
  /**
   * Most units one key (an account, a tenant) may hold at once, for acquisitions that name a `key`:
   * a waiter whose key is at its share waits without holding up the waiters of other keys behind it.
   * @default no share
   */
  maxPerKey?: number;
  /** Most acquisitions waiting; one more is refused at once with `full()`. @default unbounded */
  maxWaiting?: number;
  /** Longest wait, ms; a waiter still waiting is refused with `timedOut()`. @default no limit */
  maxWaitMs?: number;
  /** The error of an acquisition refused because `maxWaiting` are waiting already. */
  full?: () => Error;
  /** The error of an acquisition that waited `maxWaitMs`. */
  timedOut?: () => Error;
}

/** What one acquisition asks for. */
export interface AcquireOptions {
  /** Units to hold (a weight: bytes, pages). @default 1 */
  units?: number;
  /** Aborting it while the acquisition waits withdraws it: it rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Whose units these are, for `maxPerKey`. */
  key?: string | undefined;
}

/** Gives the units back; calls after the first do nothing. */
export type Release = () => void;

interface Waiter {
  units: number;
  key: string | undefined;
  grant(): void;
  refuse(reason: unknown): void;
}

/**
 * A counting (weighted) semaphore with a first-in, first-out wait queue: the one wait queue of
 * pixport (the work gate's job slots, the memory budget's bytes, pools of engine processes and
 * readers). An acquisition is granted at once when nobody waits and its units fit; otherwise it
 * waits its turn, and no later one overtakes it (a large reservation is not starved by small ones).
 * A waiter leaves on its signal, after `maxWaitMs`, or when the semaphore is closed.
 *
 * Core code may import nothing but zod; a promise-limiter library (p-limit, p-queue) also has no
 * weights, no bound on the waiters and no per-waiter deadline, which the gate and the budget need.
 *
 * @example
 * ```ts
 * const slots = new Semaphore({ capacity: 4, maxWaiting: 16, maxWaitMs: 10_000 });
 * const answer = await slots.run(() => work(), { signal });
 * ```
 */
export class Semaphore {
  readonly capacity: number;
  readonly #options: SemaphoreOptions;
  readonly #waiting: Waiter[] = [];
  #held = 0;
  /** Units held per key (entries removed at 0, so the map stays small). */
  readonly #byKey = new Map<string, number>();
  #closed: (() => unknown) | undefined;

  constructor(options: SemaphoreOptions) {
    this.capacity = options.capacity;
    this.#options = options;
  }

  /** Units held now. */
  get held(): number {
    return this.#held;
  }

  /** Acquisitions waiting now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Units held now by `key`. */
  heldBy(key: string): number {
    return this.#byKey.get(key) ?? 0;
  }

  /** Whether an acquisition of `units` (for `key`) would be granted at once. */
  canAcquire(units = 1, key?: string): boolean {
    return (
      this.#closed === undefined &&
      this.#nobodyAhead() &&
      this.#held + units <= this.capacity &&
      this.#keyFits(key, units)
    );
  }

  /** Whether an acquisition that cannot be granted at once would be refused (`maxWaiting` reached). */
  isFull(): boolean {
    return this.#waiting.length >= (this.#options.maxWaiting ?? Number.POSITIVE_INFINITY);
  }

  /** `units` (for `key`) held at once, or `null` (nothing held) when an acquisition would have to wait. */
  tryAcquire(units = 1, key?: string): Release | null {
    if (!this.canAcquire(units, key)) return null;
    return this.#take(units, key);
  }

  /**
   * Waits for `units` and resolves with their release. Rejects with a `RangeError` when `units`
   * exceed the capacity (it could never be granted), with `full()` when `maxWaiting` wait already,
   * with `timedOut()` after `maxWaitMs`, with the signal's reason when it aborts first, and with the
   * close reason once closed.
   */
  acquire(options: AcquireOptions = {}): Promise<Release> {
    const units = options.units ?? 1;
    const { signal, key } = options;
    if (this.#closed !== undefined) return Promise.reject(this.#closed());
    if (!(units >= 0 && units <= Math.min(this.capacity, this.#options.maxPerKey ?? this.capacity))) {
      return Promise.reject(new RangeError(`${units} units exceed the capacity of ${this.capacity}.`));
    }
    const granted = this.tryAcquire(units, key);
    if (granted !== null) return Promise.resolve(granted);
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.isFull()) return Promise.reject(this.#options.full?.() ?? new Error("Too many waiting."));
    return new Promise<Release>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const waiter: Waiter = {
        units,
        key,
        grant: () => {
          settle();
          resolve(this.#take(units, key));
        },
        refuse: (reason) => {
          settle();
          reject(reason);
        },
      };
      const leave = (reason: unknown) => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        waiter.refuse(reason);
        // The head left: the ones behind it may fit now.
        this.#grant();
      };
      const onAbort = () => leave(signal?.reason);
      const maxWaitMs = this.#options.maxWaitMs;
      if (maxWaitMs !== undefined) {
        timer = setTimeout(
          () => leave(this.#options.timedOut?.() ?? new Error(`Waited ${maxWaitMs} ms.`)),
          maxWaitMs,
        );
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** Runs `task` holding `units`, and gives them back when it settles. */
  async run<T>(task: () => Promise<T>, options: AcquireOptions = {}): Promise<T> {
    const release = await this.acquire(options);
    try {
      return await task();
    } finally {
      release();
    }
  }

  /**
   * Refuses every waiting and later acquisition with `reason()`; units held stay held until
   * released.
   */
  close(reason: () => unknown): void {
    this.#closed = reason;
    for (const waiter of this.#waiting.splice(0)) waiter.refuse(reason());
  }

  /**
   * Whether no waiter is ahead of a new acquisition: none waits, or each waits only for its own
   * key's share (a waiter that fits its share waits for the capacity, and is not overtaken).
   */
  #nobodyAhead(): boolean {
    if (this.#waiting.length === 0) return true;
    if (this.#options.maxPerKey === undefined) return false;
    return this.#waiting.every((waiter) => !this.#keyFits(waiter.key, waiter.units));
  }

  #keyFits(key: string | undefined, units: number): boolean {
    const share = this.#options.maxPerKey;
    return key === undefined || share === undefined || this.heldBy(key) + units <= share;
  }

  #take(units: number, key: string | undefined): Release {
    this.#held += units;
    if (key !== undefined) this.#byKey.set(key, this.heldBy(key) + units);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held -= units;
      if (key !== undefined) {
        const left = this.heldBy(key) - units;
        if (left > 0) this.#byKey.set(key, left);
        else this.#byKey.delete(key);
      }
      this.#grant();
    };
  }

  /**
   * Grants waiters in order while they fit the capacity; one whose key is at its share is passed
   * over (it waits for its own key's units), one that does not fit the capacity stops the walk.
   */
  #grant(): void {
    for (let index = 0; index < this.#waiting.length; ) {
      const waiter = this.#waiting[index]!;
      if (this.#held + waiter.units > this.capacity) return;
      if (!this.#keyFits(waiter.key, waiter.units)) {
        index += 1;
        continue;
      }
      this.#waiting.splice(index, 1);
      waiter.grant();
    }
  }
}
