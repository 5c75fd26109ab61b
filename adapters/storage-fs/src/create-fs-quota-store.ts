import path from "node:path";
import type { QuotaReservation, QuotaReserveRequest, QuotaStore } from "@pixport/core";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-write.js";
import { withStorageErrors } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, parseFsOptions, rootSchema } from "./options.js";
import { counterFileOf, readCounter, withCounterLock } from "./quota-counter-files.js";
import { addPending, flushPending, pendingUnits, type QuotaStoreState } from "./quota-uncapped-batch.js";

/** Options of {@link createFsQuotaStore}. */
export const fsQuotaStoreOptionsSchema = z.object({
  /** Directory of the counters (`<root>/<period>/<account>.json`); created on the first write. */
  root: rootSchema,
  /**
   * A lock file older than this is taken to be left by a crashed process and is broken, ms.
   * @default 10000
   */
  staleLockMs: z.number().int().positive().default(10_000),
  /** How long a reservation waits for another process's lock before failing, ms. @default 5000 */
  lockTimeoutMs: z.number().int().positive().default(5_000),
  /** Longest delay before uncapped reservations are written, ms. @default 200 */
  flushMs: z.number().int().min(1).max(60_000).default(200),
  /** The `node:fs/promises` functions to use; for fault-injection tests. @default node:fs/promises */
  fs: fsSchema.optional(),
});

export type FsQuotaStoreOptions = z.input<typeof fsQuotaStoreOptionsSchema>;

/** A QuotaStore on files, with `flush()` to write uncapped counts now (on shutdown). */
export interface FsQuotaStore extends QuotaStore {
  flush(): Promise<void>;
}

/**
 * A QuotaStore on the local filesystem, so that monthly usage survives restarts and `kill -9` on
 * the embedded deployment, and another process (the CLI's `accounts show`) reads what the server
 * counted. One small file per account and period (`<root>/<period>/<account>.json`, names encoded
 * so no account id can leave the root), replaced crash-safely (temp file, fsync, rename, directory
 * fsync) before a reservation is granted: a granted unit is on disk, never lost by a crash.
 *
 * Reservations are atomic across every instance and process sharing `root`: each takes an
 * exclusive lock file (`O_EXCL`) holding its process id for its counter; a lock whose process is
 * gone (a crash, `kill -9`) is broken at once, and any lock older than `staleLockMs` too. The
 * directory must not be shared between hosts. Cost: two fsyncs per capped reservation (the directory's
 * is shared with concurrent writers); uncapped ones are batched (see `flushMs`).
 *
 * @example
 * ```ts
 * const quota = createFsQuotaStore({ root: "/var/lib/pixport/quota" });
 * const pipeline = createImagePipeline({ ...deps, quota });
 * ```
 */
export function createFsQuotaStore(options: FsQuotaStoreOptions): FsQuotaStore {
  const parsed = parseFsOptions(fsQuotaStoreOptionsSchema, options, "createFsQuotaStore");
  const state: QuotaStoreState = {
    root: path.resolve(parsed.root),
    fs: parsed.fs ?? defaultFs,
    local: createKeyedLock(),
    staleLockMs: parsed.staleLockMs,
    lockTimeoutMs: parsed.lockTimeoutMs,
    flushMs: parsed.flushMs,
    pending: new Map(),
    known: new Map(),
    flushing: undefined,
    timer: undefined,
  };
  return {
    async flush() {
      await state.flushing;
      await flushPending(state);
    },
    reserve: (request) => reserve(state, request),
    release: (request) => release(state, request),
    usage(accountId, period) {
      return withStorageErrors(
        "reading quota",
        async () =>
          (await readCounter(state.fs, counterFileOf(state.root, accountId, period))) +
          pendingUnits(state, accountId, period),
      );
    },
  };
}

function reserve(
  state: QuotaStoreState,
  { accountId, period, units, limit }: QuotaReserveRequest,
): Promise<QuotaReservation> {
  const file = counterFileOf(state.root, accountId, period);
  if (limit >= Number.MAX_SAFE_INTEGER) {
    return withStorageErrors("reserving quota", async () => {
      // The count on disk is read once per counter and then known from this store's own
      // flushes (another process's counts show after its flush and ours): an uncapped
      // reservation is never refused, so `used` is for display, and a read per call (a
      // delivered variant's counter) cost more than the call itself.
      let base = state.known.get(file);
      if (base === undefined) {
        base = await readCounter(state.fs, file);
        state.known.set(file, base);
      }
      return { granted: true, used: base + addPending(state, accountId, period, units), limit };
    });
  }
  return withStorageErrors("reserving quota", () =>
    withCounterLock(state, file, async () => {
      const used = await readCounter(state.fs, file);
      if (used + units > limit) return { granted: false, used, limit };
      await writeFileAtomic(state.fs, file, JSON.stringify({ used: used + units }));
      state.known.set(file, used + units);
      return { granted: true, used: used + units, limit };
    }),
  );
}

function release(
  state: QuotaStoreState,
  { accountId, period, units }: Omit<QuotaReserveRequest, "limit">,
): Promise<void> {
  const file = counterFileOf(state.root, accountId, period);
  if (pendingUnits(state, accountId, period) >= units) {
    addPending(state, accountId, period, -units);
    return Promise.resolve();
  }
  return withStorageErrors("releasing quota", () =>
    withCounterLock(state, file, async () => {
      const used = await readCounter(state.fs, file);
      await writeFileAtomic(state.fs, file, JSON.stringify({ used: Math.max(0, used - units) }));
      state.known.set(file, Math.max(0, used - units));
    }),
  );
}
