import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import type * as nodeFs from "node:fs/promises";
import path from "node:path";
import { errorCode } from "./fs-errors.js";

/**
 * The `node:fs/promises` functions the filesystem adapters use. Pass a wrapper through the `fs`
 * option to inject faults or observe the call order in tests; production code uses the real
 * module.
 */
export type FsPromises = Pick<
  typeof nodeFs,
  "open" | "rename" | "link" | "unlink" | "mkdir" | "readFile" | "readdir" | "stat" | "realpath"
> &
  // Optional: without it, folders emptied by deletes are left in place.
  Partial<Pick<typeof nodeFs, "rmdir">>;

/** Names of the functions an `fs` option must provide. */
export const FS_FUNCTIONS = [
  "open",
  "rename",
  "link",
  "unlink",
  "mkdir",
  "readFile",
  "readdir",
  "stat",
  "realpath",
] as const satisfies readonly (keyof FsPromises)[];

/**
 * Every internal file name contains `~`, which no blob key, image id or file we own otherwise
 * contains, so temp files and sidecars can never collide with stored data.
 */
const TEMPORARY_SUFFIX = "~tmp";

/** A unique temp name for `name`, hidden (leading dot) and recognisable by {@link isTemporaryFileName}. */
export function temporaryFileName(name: string): string {
  // The name is shortened so that the temp name stays under the usual 255-byte limit.
  return `.${name.slice(0, 64)}.${process.pid}.${randomBytes(6).toString("hex")}${TEMPORARY_SUFFIX}`;
}

/** Whether a directory entry is a temp file left by {@link writeFileAtomic} (maybe by a crashed process). */
export function isTemporaryFileName(name: string): boolean {
  return name.endsWith(TEMPORARY_SUFFIX);
}

/** Options of {@link writeFileAtomic}. */
export interface WriteFileAtomicOptions {
  /**
   * Fail with `EEXIST` instead of replacing an existing target (create-if-absent, atomic across
   * processes because it uses `link(2)`).
   * @default false
   */
  exclusive?: boolean;
  /**
   * `fsync` the directory after the rename. Pass `false` only when the caller syncs the directory
   * itself after several writes into it (one directory sync then covers them all).
   * @default true
   */
  syncDirectory?: boolean;
  /**
   * `false` skips both fsyncs (of the file and of the directory): the write stays atomic for every
   * reader, but a power failure may lose it. For caches. @default true
   */
  durable?: boolean;
}

/**
 * Replaces (or, with `exclusive`, creates) `target` so that every reader, and the disk after a crash
 * or power loss, sees either the old complete content or the new complete content:
 *
 * 1. write a uniquely named temp file in the same directory (same filesystem, so rename is atomic);
 * 2. `fsync` it, so the data is on disk before any name points at it (ext4 delayed allocation can
 *    otherwise leave a zero-filled file behind a rename that survived);
 * 3. `rename` it over the target (or `link` it to the target when exclusive);
 * 4. `fsync` the directory, so the new name itself survives a power loss.
 *
 * A crash can leave a temp file behind; readers ignore it and {@link sweepTemporaryFiles} removes it.
 */
export async function writeFileAtomic(
  fs: FsPromises,
  target: string,
  data: string | Uint8Array,
  options: WriteFileAtomicOptions = {},
): Promise<void> {
  const directory = path.dirname(target);
  const temporary = path.join(directory, temporaryFileName(path.basename(target)));
  let created = false;
  try {
    const handle = await fs.open(temporary, "wx");
    created = true;
    try {
      await handle.writeFile(data);
      // fdatasync: the bytes and the size (what reading the file back needs), without a separate
      // flush of timestamps; the directory sync below makes the name durable.
      if (options.durable !== false) await handle.datasync();
    } finally {
      await handle.close();
    }
    if (options.exclusive === true) {
      await fs.link(temporary, target);
    } else {
      await fs.rename(temporary, target);
      created = false;
    }
  } catch (error) {
    if (created) await fs.unlink(temporary).catch(() => undefined);
    throw error;
  }
  if (created) {
    // The target is in place; a failure to drop the extra name only leaves work for the sweeper.
    await fs.unlink(temporary).catch(() => undefined);
  }
  if (options.syncDirectory !== false && options.durable !== false) await syncDirectory(fs, directory);
}

/**
 * `fsync` on a directory, which makes renames, links and unlinks inside it durable. Filesystems that
 * cannot sync a directory (`EINVAL`, `ENOTSUP`) and Windows (no directory handles) are skipped.
 */
export function syncDirectory(fs: FsPromises, directory: string): Promise<void> {
  if (process.platform === "win32") return Promise.resolve();
  // Group commit: callers arriving while a sync of the same directory runs share the next one,
  // which starts after it (their renames may postdate the running sync's start).
  let pending = pendingSyncs.get(fs);
  if (pending === undefined) {
    pending = new Map();
    pendingSyncs.set(fs, pending);
  }
  const state = pending.get(directory);
  if (state === undefined) {
    const running = syncDirectoryNow(fs, directory).finally(() => advance(pending, directory));
    pending.set(directory, { running, next: undefined });
    return running;
  }
  state.next ??= state.running
    .then(
      () => undefined,
      () => undefined,
    )
    .then(() => syncDirectoryNow(fs, directory));
  return state.next;
}

interface DirectorySyncState {
  running: Promise<void>;
  next: Promise<void> | undefined;
}

const pendingSyncs = new WeakMap<FsPromises, Map<string, DirectorySyncState>>();

function advance(pending: Map<string, DirectorySyncState>, directory: string): void {
  const state = pending.get(directory);
  if (state === undefined) return;
  if (state.next === undefined) {
    pending.delete(directory);
    return;
  }
  const running = state.next;
  pending.set(directory, { running, next: undefined });
  void running.then(
    () => advance(pending, directory),
    () => advance(pending, directory),
  );
}

async function syncDirectoryNow(fs: FsPromises, directory: string): Promise<void> {
  const handle = await fs.open(directory, "r");
  try {
    await handle.sync();
  } catch (error) {
    const code = errorCode(error);
    if (code !== "EINVAL" && code !== "ENOTSUP") throw error;
  } finally {
    await handle.close();
  }
}

/** Options of {@link sweepTemporaryFiles}. */
export interface SweepTemporaryFilesOptions {
  /**
   * Only temp files whose modification time is at least this old are removed, so writes in flight
   * (in this or another process) are left alone. In milliseconds.
   * @default 600000 (10 minutes)
   */
  olderThanMs?: number;
}

/** The default of {@link SweepTemporaryFilesOptions.olderThanMs}. */
export const DEFAULT_SWEEP_AGE_MS = 10 * 60 * 1000;

/**
 * Removes temp files left by crashed writes under `directory`. Does not follow symbolic links.
 * Resolves the number of files removed; a missing directory counts as empty.
 */
export async function sweepTemporaryFiles(
  fs: FsPromises,
  directory: string,
  options: SweepTemporaryFilesOptions & { recursive: boolean },
): Promise<number> {
  const olderThanMs = options.olderThanMs ?? DEFAULT_SWEEP_AGE_MS;
  let entries: Dirent[];
  try {
    entries = await fs.readdir(directory, { withFileTypes: true });
  } catch (error) {
    if (errorCode(error) === "ENOENT" || errorCode(error) === "ENOTDIR") return 0;
    throw error;
  }
  let removed = 0;
  for (const entry of entries) {
    const entryPath = path.join(directory, entry.name);
    if (entry.isDirectory() && options.recursive) {
      removed += await sweepTemporaryFiles(fs, entryPath, options);
    } else if (entry.isFile() && isTemporaryFileName(entry.name)) {
      try {
        const info = await fs.stat(entryPath);
        if (Date.now() - info.mtimeMs < olderThanMs) continue;
        await fs.unlink(entryPath);
        removed += 1;
      } catch (error) {
        // Another sweeper, or the writer itself, got there first.
        if (errorCode(error) !== "ENOENT") throw error;
      }
    }
  }
  return removed;
}
