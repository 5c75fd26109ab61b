import path from "node:path";
import { ErrorCodes, ImagePipelineError, type QuotaStore } from "@pixport/core";
import { z } from "zod";
import { type FsPromises, temporaryFileName, writeFileAtomic } from "./atomic-write.js";
import { errorCode, isMissing, toStorageError } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, parseFsOptions, rootSchema } from "./options.js";

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

/** Whether a process of this host is running (signal 0 checks without signalling). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** How old a lock file without a holder pid must be before it is broken, ms. */
const EMPTY_LOCK_GRACE_MS = 1_000;

const counterSchema = z.object({ used: z.number().int().nonnegative() });

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
  const root = path.resolve(parsed.root);
  const fs: FsPromises = parsed.fs ?? defaultFs;
  const local = createKeyedLock();

  const fileOf = (accountId: string, period: string) => {
    const safePeriod = /^[0-9]{4}-[0-9]{2}$/.test(period)
      ? period
      : Buffer.from(period).toString("base64url");
    return path.join(root, safePeriod, `${Buffer.from(accountId).toString("base64url") || "_"}.json`);
  };

  async function read(file: string): Promise<number> {
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch (error) {
      if (isMissing(error)) return 0;
      throw error;
    }
    try {
      return counterSchema.parse(JSON.parse(text)).used;
    } catch (error) {
      throw new ImagePipelineError(
        ErrorCodes.INTERNAL,
        `The quota counter ${path.basename(file)} is corrupt.`,
        {
          cause: error,
        },
      );
    }
  }

  /**
   * Creates the lock file with its holder's pid already in it, atomically: the pid goes into a
   * temp file that is then hard-linked to the lock name (`link(2)` fails with EEXIST when the lock
   * exists). The lock names its holder, so a lock left by a process that died (`kill -9`) is broken
   * at once rather than after `staleLockMs`; opening the lock and then writing the pid would leave
   * an empty lock, with no holder to check, when the process dies between the two.
   */
  async function createLockFile(lock: string): Promise<void> {
    const temporary = path.join(path.dirname(lock), temporaryFileName(path.basename(lock)));
    const handle = await fs.open(temporary, "wx");
    try {
      await handle.writeFile(String(process.pid));
    } finally {
      await handle.close();
    }
    try {
      await fs.link(temporary, lock);
    } finally {
      await fs.unlink(temporary).catch(() => undefined);
    }
  }

  /** Runs `task` holding the cross-process lock of `file` (and the in-process one first). */
  function locked<T>(file: string, task: () => Promise<T>): Promise<T> {
    return local.run(file, async () => {
      const lock = `${file}~lock`;
      await fs.mkdir(path.dirname(file), { recursive: true });
      const deadline = Date.now() + parsed.lockTimeoutMs;
      for (let attempt = 0; ; attempt++) {
        try {
          await createLockFile(lock);
          break;
        } catch (error) {
          if (errorCode(error) !== "EEXIST") throw error;
          const info = await fs.stat(lock).catch(() => null);
          const text = await fs.readFile(lock, "utf8").catch(() => "");
          const holder = Number(text);
          const age = info === null ? 0 : Date.now() - info.mtimeMs;
          if (
            age > parsed.staleLockMs ||
            (Number.isInteger(holder) && holder > 0 && holder !== process.pid && !isAlive(holder)) ||
            // A lock without a holder was left by a crash between creating it and writing it
            // (older versions could do that; power loss still can): no holder will ever free it.
            (text === "" && age > EMPTY_LOCK_GRACE_MS)
          ) {
            await fs.unlink(lock).catch(() => undefined);
            continue;
          }
          if (Date.now() > deadline) {
            throw new ImagePipelineError(
              ErrorCodes.STORAGE_UNAVAILABLE,
              "The quota counter stayed locked by another process; retry later.",
              { retryAfterSeconds: 1 },
            );
          }
          await new Promise((resolve) => setTimeout(resolve, Math.min(2 + attempt, 20)));
        }
      }
      try {
        return await task();
      } finally {
        await fs.unlink(lock).catch(() => undefined);
      }
    });
  }

  const translated = <T>(action: string, task: () => Promise<T>): Promise<T> =>
    task().catch((error: unknown) => {
      throw toStorageError(error, action);
    });

  // Uncapped reservations (an upgraded account: `limit` is Number.MAX_SAFE_INTEGER) cannot be
  // refused, so they need not be on disk before they are granted: they are added up here and
  // written in one locked update per counter at most `flushMs` later (and on `flush()`), which
  // keeps two fsyncs off every billed request of a paying account. A crash loses at most that
  // window of such counts; capped (trial) reservations are always written before they are granted.
  const pending = new Map<string, { accountId: string; period: string; units: number }>();
  /** The last count this store read or wrote per counter file (uncapped reservations only). */
  const known = new Map<string, number>();
  let flushing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const flush = async (): Promise<void> => {
    clearTimeout(timer);
    timer = undefined;
    const batch = [...pending.values()];
    pending.clear();
    await Promise.all(
      batch.map(({ accountId, period, units }) => {
        const file = fileOf(accountId, period);
        return locked(file, async () => {
          const used = await read(file);
          const written = Math.max(0, used + units);
          await writeFileAtomic(fs, file, JSON.stringify({ used: written }));
          known.set(file, written);
        }).catch((error: unknown) => {
          // Keep the units for the next flush rather than lose them.
          const key = `${accountId}\u0000${period}`;
          const again = pending.get(key);
          pending.set(key, { accountId, period, units: (again?.units ?? 0) + units });
          schedule();
          throw error;
        });
      }),
    );
  };
  const schedule = () => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      flushing = flush()
        .catch(() => undefined)
        .finally(() => {
          flushing = undefined;
        });
    }, parsed.flushMs);
    timer.unref();
  };
  const addPending = (accountId: string, period: string, units: number) => {
    const key = `${accountId}\u0000${period}`;
    const entry = pending.get(key);
    pending.set(key, { accountId, period, units: (entry?.units ?? 0) + units });
    schedule();
    return pending.get(key)!.units;
  };
  const pendingUnits = (accountId: string, period: string) =>
    pending.get(`${accountId}\u0000${period}`)?.units ?? 0;

  return {
    async flush() {
      await flushing;
      await flush();
    },
    reserve({ accountId, period, units, limit }) {
      const file = fileOf(accountId, period);
      if (limit >= Number.MAX_SAFE_INTEGER) {
        return translated("reserving quota", async () => {
          // The count on disk is read once per counter and then known from this store's own
          // flushes (another process's counts show after its flush and ours): an uncapped
          // reservation is never refused, so `used` is for display, and a read per call (a
          // delivered variant's counter) cost more than the call itself.
          let base = known.get(file);
          if (base === undefined) {
            base = await read(file);
            known.set(file, base);
          }
          return { granted: true, used: base + addPending(accountId, period, units), limit };
        });
      }
      return translated("reserving quota", () =>
        locked(file, async () => {
          const used = await read(file);
          if (used + units > limit) return { granted: false, used, limit };
          await writeFileAtomic(fs, file, JSON.stringify({ used: used + units }));
          known.set(file, used + units);
          return { granted: true, used: used + units, limit };
        }),
      );
    },
    release({ accountId, period, units }) {
      const file = fileOf(accountId, period);
      if (pendingUnits(accountId, period) >= units) {
        addPending(accountId, period, -units);
        return Promise.resolve();
      }
      return translated("releasing quota", () =>
        locked(file, async () => {
          const used = await read(file);
          await writeFileAtomic(fs, file, JSON.stringify({ used: Math.max(0, used - units) }));
          known.set(file, Math.max(0, used - units));
        }),
      );
    },
    usage(accountId, period) {
      return translated(
        "reading quota",
        async () => (await read(fileOf(accountId, period))) + pendingUnits(accountId, period),
      );
    },
  };
}
