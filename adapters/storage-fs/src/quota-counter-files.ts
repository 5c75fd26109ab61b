import path from "node:path";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";
import { type FsPromises, temporaryFileName } from "./atomic-write.js";
import { errorCode, isMissing } from "./fs-errors.js";
import type { KeyedLock } from "./keyed-lock.js";

/** What the counter files of one quota store share: where they are and how they are locked. */
export interface QuotaCounterFiles {
  /** The absolute root directory. */
  readonly root: string;
  readonly fs: FsPromises;
  /** The in-process lock taken before the lock file. */
  readonly local: KeyedLock;
  /** A lock file older than this is broken, ms. */
  readonly staleLockMs: number;
  /** How long to wait for another process's lock before failing, ms. */
  readonly lockTimeoutMs: number;
}

/** How old a lock file without a holder pid must be before it is broken, ms. */
const EMPTY_LOCK_GRACE_MS = 1_000;

const counterSchema = z.object({ used: z.number().int().nonnegative() });

/** The counter file of an account and period (`<root>/<period>/<account>.json`, names encoded). */
export function counterFileOf(root: string, accountId: string, period: string): string {
  const safePeriod = /^[0-9]{4}-[0-9]{2}$/.test(period) ? period : Buffer.from(period).toString("base64url");
  return path.join(root, safePeriod, `${Buffer.from(accountId).toString("base64url") || "_"}.json`);
}

/** The count in a counter file; 0 when it does not exist, `INTERNAL` when it is corrupt. */
export async function readCounter(fs: FsPromises, file: string): Promise<number> {
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

/** Whether a process of this host is running (signal 0 checks without signalling). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Creates the lock file with its holder's pid already in it, atomically: the pid goes into a
 * temp file that is then hard-linked to the lock name (`link(2)` fails with EEXIST when the lock
 * exists). The lock names its holder, so a lock left by a process that died (`kill -9`) is broken
 * at once rather than after `staleLockMs`; opening the lock and then writing the pid would leave
 * an empty lock, with no holder to check, when the process dies between the two.
 */
async function createLockFile(fs: FsPromises, lock: string): Promise<void> {
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

/** Whether an existing lock file was left by a holder that will never free it. */
async function isAbandoned(files: QuotaCounterFiles, lock: string): Promise<boolean> {
  const info = await files.fs.stat(lock).catch(() => null);
  const text = await files.fs.readFile(lock, "utf8").catch(() => "");
  const holder = Number(text);
  const age = info === null ? 0 : Date.now() - info.mtimeMs;
  return (
    age > files.staleLockMs ||
    (Number.isInteger(holder) && holder > 0 && holder !== process.pid && !isAlive(holder)) ||
    // A lock without a holder was left by a crash between creating it and writing it
    // (older versions could do that; power loss still can): no holder will ever free it.
    (text === "" && age > EMPTY_LOCK_GRACE_MS)
  );
}

/** Takes the lock file `lock`, breaking abandoned ones; `STORAGE_UNAVAILABLE` after the timeout. */
async function acquireLockFile(files: QuotaCounterFiles, lock: string): Promise<void> {
  const deadline = Date.now() + files.lockTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await createLockFile(files.fs, lock);
      return;
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
      if (await isAbandoned(files, lock)) {
        await files.fs.unlink(lock).catch(() => undefined);
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
}

/** Runs `task` holding the cross-process lock of `file` (and the in-process one first). */
export function withCounterLock<T>(
  files: QuotaCounterFiles,
  file: string,
  task: () => Promise<T>,
): Promise<T> {
  return files.local.run(file, async () => {
    const lock = `${file}~lock`;
    await files.fs.mkdir(path.dirname(file), { recursive: true });
    await acquireLockFile(files, lock);
    try {
      return await task();
    } finally {
      await files.fs.unlink(lock).catch(() => undefined);
    }
  });
}
