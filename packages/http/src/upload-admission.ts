import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { formatBytes } from "@pixport/core/adapter-kit";

/** An upload's place among the slots, from its admission to its answer. */
export interface UploadSlot {
  /**
   * Aborted (reason: a `REQUEST_TIMEOUT` error) when the slot is taken back for an upload of
   * another account because this body arrives too slowly; the slot is already free then.
   */
  readonly signal: AbortSignal;
  /** Counts body bytes as they arrive (the rate that keeps the slot). */
  received(bytes: number): void;
  /** The whole body is in: from now on the slot is never taken back. */
  bodyRead(): void;
  /** Frees the slot (once the answer is built); calling it again does nothing. */
  release(): void;
}

/** The upload slots of a handler: in progress at once, in all and per account. */
export interface UploadAdmission {
  /**
   * Resolves with a slot for this upload, at once or after a short wait while a slot held by a
   * slow body may be taken back; rejects with `OVERLOADED` (503, retry after 1 s) otherwise.
   * `signal` (the client going away) ends the wait; `onWait` is called once if the upload waits.
   */
  admit(accountId: string | undefined, signal?: AbortSignal, onWait?: () => void): Promise<UploadSlot>;
}

/** Limits of {@link createUploadAdmission}. */
export interface UploadAdmissionLimits {
  maxConcurrentUploads: number;
  maxConcurrentUploadsPerAccount: number;
  /**
   * While an upload waits, the average rate a body must keep to hold its slot once it has held it
   * `fairUploadAfterMs`, growing in proportion to the time held; `0` never takes a slot back.
   */
  fairUploadBytesPerSecond: number;
  /** Time a body holds its slot before its rate is judged for a waiting upload, ms. */
  fairUploadAfterMs: number;
}

interface Held {
  readonly account: string;
  readonly since: number;
  bytes: number;
  reading: boolean;
  released: boolean;
  readonly controller: AbortController;
}

interface Waiter {
  readonly account: string;
  readonly since: number;
  resolve(slot: UploadSlot): void;
  reject(error: Error): void;
}

/** How often waiting uploads look for a slot to take back, ms. */
const WAIT_TICK_MS = 100;

/**
 * Bounds the uploads (multipart requests) a handler reads at once, from reading the body to the
 * answer, so the memory of upload bodies stays below `maxConcurrentUploads x maxUploadBytes`, and
 * keeps them fair between tenants:
 * - one account holds at most `maxConcurrentUploadsPerAccount` slots (with its waiting uploads);
 * - when every slot is taken, a new upload waits (at most twice `fairUploadAfterMs`) instead of
 *   being refused while some slot is held by a body of another account (one holding at least as
 *   many slots) that is still arriving and may be too slow. A body that has held its slot `t` ms
 *   (`t >= fairUploadAfterMs`) with fewer than `fairUploadBytesPerSecond x t/1000 x
 *   t/fairUploadAfterMs` bytes in is too slow: the slowest such body loses its slot to the waiting
 *   upload (its request ends with 408 `REQUEST_TIMEOUT`). Waiting uploads are served accounts
 *   holding the fewest slots first, then first come.
 *
 * Slots that slow bodies hold therefore turn over within about `fairUploadAfterMs` whenever a
 * well-behaved upload of another tenant waits, however many accounts send them; only bodies that
 * keep up the growing rate (bandwidth, not trickles) hold their slots to the end.
 */
export function createUploadAdmission(limits: UploadAdmissionLimits): UploadAdmission {
  const slots = new FairUploadSlots(limits);
  return { admit: (accountId, signal, onWait) => slots.admit(accountId, signal, onWait) };
}

class FairUploadSlots {
  private readonly held = new Set<Held>();
  /** Slots held per account (entries removed at 0, so the map stays small). */
  private readonly holding = new Map<string, number>();
  private readonly waiters: Waiter[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly maxWaitMs: number;

  constructor(private readonly limits: UploadAdmissionLimits) {
    this.maxWaitMs = Math.max(1000, 2 * limits.fairUploadAfterMs);
  }

  admit(accountId: string | undefined, signal?: AbortSignal, onWait?: () => void): Promise<UploadSlot> {
    const account = accountId ?? "";
    const waiting = this.waiters.filter((waiter) => waiter.account === account).length;
    if (
      accountId !== undefined &&
      this.count(account) + waiting >= this.limits.maxConcurrentUploadsPerAccount
    ) {
      return Promise.reject(
        new ImagePipelineError(
          ErrorCodes.OVERLOADED,
          `This account already has ${this.limits.maxConcurrentUploadsPerAccount} uploads in progress; retry when one has finished.`,
          { retryAfterSeconds: 1 },
        ),
      );
    }
    if (this.waiters.length === 0 && this.held.size < this.limits.maxConcurrentUploads) {
      return Promise.resolve(this.grant(account));
    }
    return new Promise<UploadSlot>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const gone = () => {
        const at = this.waiters.indexOf(waiter);
        if (at !== -1) this.waiters.splice(at, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        account,
        since: performance.now(),
        resolve: (slot) => {
          signal?.removeEventListener("abort", gone);
          resolve(slot);
        },
        reject: (error) => {
          signal?.removeEventListener("abort", gone);
          reject(error);
        },
      };
      signal?.addEventListener("abort", gone, { once: true });
      if (this.waiters.length >= this.limits.maxConcurrentUploads && !this.makeRoomFor(waiter)) {
        waiter.reject(this.full());
        return;
      }
      this.waiters.push(waiter);
      this.pump();
      if (this.waiters.includes(waiter)) onWait?.();
    });
  }

  private count(account: string): number {
    return this.holding.get(account) ?? 0;
  }

  private adjust(account: string, delta: number): void {
    const next = this.count(account) + delta;
    if (next > 0) this.holding.set(account, next);
    else this.holding.delete(account);
  }

  /** Accounts holding the fewest slots first, then first come. */
  private readonly byRank = (a: Waiter, b: Waiter) =>
    this.count(a.account) - this.count(b.account) || a.since - b.since;

  private free(entry: Held): void {
    if (entry.released) return;
    entry.released = true;
    this.held.delete(entry);
    this.adjust(entry.account, -1);
  }

  private grant(account: string): UploadSlot {
    const entry: Held = {
      account,
      since: performance.now(),
      bytes: 0,
      reading: true,
      released: false,
      controller: new AbortController(),
    };
    this.held.add(entry);
    this.adjust(account, 1);
    return {
      signal: entry.controller.signal,
      received: (bytes) => {
        entry.bytes += bytes;
      },
      bodyRead: () => {
        entry.reading = false;
      },
      release: () => {
        this.free(entry);
        this.pump();
      },
    };
  }

  /** A held body a waiter of `account` may get the slot of, once it proves too slow. */
  private contestable(entry: Held, account: string): boolean {
    return entry.reading && entry.account !== account && this.count(entry.account) >= this.count(account);
  }

  /** The bytes a body holding its slot `ageMs` must have sent while uploads wait. */
  private requiredBytes(ageMs: number): number {
    return ((this.limits.fairUploadBytesPerSecond * ageMs) / 1000) * (ageMs / this.limits.fairUploadAfterMs);
  }

  private slowest(account: string, now: number): Held | undefined {
    let found: Held | undefined;
    for (const entry of this.held) {
      const age = now - entry.since;
      if (!this.contestable(entry, account) || age < this.limits.fairUploadAfterMs) continue;
      if (entry.bytes >= this.requiredBytes(age)) continue;
      if (found === undefined || entry.bytes / age < found.bytes / (now - found.since)) found = entry;
    }
    return found;
  }

  /** Some slot may still be taken back for `account` (a contestable body not yet judged, or slow). */
  private mayFree(account: string): boolean {
    if (this.limits.fairUploadBytesPerSecond === 0) return false;
    for (const entry of this.held) if (this.contestable(entry, account)) return true;
    return false;
  }

  private takeBack(entry: Held, now: number): void {
    const seconds = (now - entry.since) / 1000;
    this.free(entry);
    entry.controller.abort(
      new ImagePipelineError(
        ErrorCodes.REQUEST_TIMEOUT,
        `The upload arrived too slowly while other uploads waited (${formatBytes(entry.bytes)} in ${seconds.toFixed(1)} s); its place went to another upload.`,
      ),
    );
  }

  /** Serves the waiters in rank order: a free slot, a slot taken back, or a refusal once hopeless. */
  private pump(): void {
    const now = performance.now();
    this.waiters.sort(this.byRank);
    for (let index = 0; index < this.waiters.length; ) {
      const waiter = this.waiters[index] as Waiter;
      const room = this.held.size < this.limits.maxConcurrentUploads;
      const victim = room ? undefined : this.slowest(waiter.account, now);
      if (room || victim !== undefined) {
        if (victim !== undefined) this.takeBack(victim, now);
        this.waiters.splice(index, 1);
        waiter.resolve(this.grant(waiter.account));
      } else if (now - waiter.since >= this.maxWaitMs || !this.mayFree(waiter.account)) {
        this.waiters.splice(index, 1);
        waiter.reject(this.full());
      } else {
        index += 1;
      }
    }
    if (this.waiters.length > 0 && this.timer === undefined) {
      this.timer = setInterval(() => this.pump(), WAIT_TICK_MS);
      this.timer.unref?.();
    } else if (this.waiters.length === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * Keeps the queue within `maxConcurrentUploads`: the last waiter goes when its account holds
   * more slots than the newcomer's (an account cannot fill the queue ahead of poorer ones).
   */
  private makeRoomFor(newcomer: Waiter): boolean {
    this.waiters.sort(this.byRank);
    const last = this.waiters[this.waiters.length - 1] as Waiter;
    if (this.count(last.account) <= this.count(newcomer.account)) return false;
    this.waiters.pop();
    last.reject(this.full());
    return true;
  }

  private full(): ImagePipelineError {
    return new ImagePipelineError(
      ErrorCodes.OVERLOADED,
      `The server is receiving ${this.held.size} uploads already; retry later.`,
      { retryAfterSeconds: 1 },
    );
  }
}
