import { writeFileAtomic } from "./atomic-write.js";
import {
  counterFileOf,
  type QuotaCounterFiles,
  readCounter,
  withCounterLock,
} from "./quota-counter-files.js";

// Uncapped reservations (an upgraded account: `limit` is Number.MAX_SAFE_INTEGER) cannot be
// refused, so they need not be on disk before they are granted: they are added up here and
// written in one locked update per counter at most `flushMs` later (and on `flush()`), which
// keeps two fsyncs off every billed request of a paying account. A crash loses at most that
// window of such counts; capped (trial) reservations are always written before they are granted.

interface PendingUnits {
  accountId: string;
  period: string;
  units: number;
}

/** The state of one quota store: its counter files and the batch of unwritten uncapped units. */
export interface QuotaStoreState extends QuotaCounterFiles {
  /** Longest delay before uncapped reservations are written, ms. */
  readonly flushMs: number;
  /** Units reserved (or released) but not yet written, per account and period. */
  readonly pending: Map<string, PendingUnits>;
  /** The last count this store read or wrote per counter file (uncapped reservations only). */
  readonly known: Map<string, number>;
  /** The flush the timer started, while it runs. */
  flushing: Promise<void> | undefined;
  timer: NodeJS.Timeout | undefined;
}

const pendingKey = (accountId: string, period: string) => `${accountId}\u0000${period}`;

/** Writes every pending count now, one locked update per counter. */
export async function flushPending(state: QuotaStoreState): Promise<void> {
  clearTimeout(state.timer);
  state.timer = undefined;
  const batch = [...state.pending.values()];
  state.pending.clear();
  await Promise.all(
    batch.map(({ accountId, period, units }) => {
      const file = counterFileOf(state.root, accountId, period);
      return withCounterLock(state, file, async () => {
        const used = await readCounter(state.fs, file);
        const written = Math.max(0, used + units);
        await writeFileAtomic(state.fs, file, JSON.stringify({ used: written }));
        state.known.set(file, written);
      }).catch((error: unknown) => {
        // Keep the units for the next flush rather than lose them.
        const key = pendingKey(accountId, period);
        const again = state.pending.get(key);
        state.pending.set(key, { accountId, period, units: (again?.units ?? 0) + units });
        scheduleFlush(state);
        throw error;
      });
    }),
  );
}

function scheduleFlush(state: QuotaStoreState): void {
  if (state.timer !== undefined) return;
  state.timer = setTimeout(() => {
    state.flushing = flushPending(state)
      .catch(() => undefined)
      .finally(() => {
        state.flushing = undefined;
      });
  }, state.flushMs);
  state.timer.unref();
}

/** Adds `units` (negative to release) to the pending count; resolves the pending total. */
export function addPending(state: QuotaStoreState, accountId: string, period: string, units: number): number {
  const key = pendingKey(accountId, period);
  const entry = state.pending.get(key);
  state.pending.set(key, { accountId, period, units: (entry?.units ?? 0) + units });
  scheduleFlush(state);
  return state.pending.get(key)!.units;
}

/** The units not yet written for an account and period. */
export const pendingUnits = (state: QuotaStoreState, accountId: string, period: string): number =>
  state.pending.get(pendingKey(accountId, period))?.units ?? 0;
