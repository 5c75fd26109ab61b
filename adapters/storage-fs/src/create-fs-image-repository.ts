import { statSync } from "node:fs";
import path from "node:path";
import {
  ErrorCodes,
  IMAGE_FORMATS,
  ImagePipelineError,
  type ImageRecord,
  type ImageRepository,
  type KeyKind,
  type Logger,
  silentLogger,
} from "@pixport/core";
import { compareNewestFirst, paginate } from "@pixport/core/adapter-kit";
import { z } from "zod";
import {
  type FsPromises,
  isTemporaryFileName,
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  syncDirectory,
  writeFileAtomic,
} from "./atomic-write.js";
import { errorCode, isMissing, toStorageError } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, loggerSchema, parseFsOptions, rootSchema } from "./options.js";

/** Options of {@link createFsImageRepository}, validated by {@link fsImageRepositoryOptionsSchema}. */
export const fsImageRepositoryOptionsSchema = z.object({
  /**
   * Directory that holds the records (`<root>/records/<id>.json`) and the change log
   * (`<root>/changes.log`), absolute or relative to the working directory. Created on first use.
   */
  root: rootSchema,
  /**
   * Size in bytes above which the change log is started afresh (every process then rebuilds its
   * index from the record files once).
   * @default 1048576 (1 MiB)
   */
  changeLogMaxBytes: z
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /**
   * Receives warnings (an unreadable record file skipped at load, a failed change-log append).
   * @default silent
   */
  logger: loggerSchema.optional(),
  /**
   * The `node:fs/promises` functions to use; for fault-injection tests.
   * @default node:fs/promises
   */
  fs: fsSchema.optional(),
});

/** Options of {@link createFsImageRepository}. */
export type FsImageRepositoryOptions = z.input<typeof fsImageRepositoryOptionsSchema>;

/** An {@link ImageRepository} on the local filesystem, with crash-recovery housekeeping. */
export interface FsImageRepository extends ImageRepository {
  /** The absolute root directory. */
  readonly root: string;
  /**
   * Removes temp files that crashed writes left behind and resolves how many were removed. Never
   * runs by itself: call it at startup and/or on a timer. The index ignores temp files either way.
   */
  sweepTemporaryFiles(options?: SweepTemporaryFilesOptions): Promise<number>;
}

/**
 * Ids that are safe as file names on every filesystem; pixport's ids (`image_` + 24 letters or
 * digits) match. Other ids cannot be stored and are never found.
 */
const RECORD_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

const recordSchema = z.object({
  id: z.string().regex(RECORD_ID_PATTERN),
  accountId: z.string(),
  stage: z.enum(["test", "live"]),
  name: z.string(),
  format: z.enum(IMAGE_FORMATS),
  width: z.number(),
  height: z.number(),
  size: z.number(),
  createdAt: z.string(),
  blobKey: z.string(),
  url: z.string().nullable(),
  frames: z.number().int().positive().optional(),
  facts: z
    .object({
      hasAlpha: z.boolean(),
      frames: z.number().int().positive(),
      dominantColor: z.string(),
      thumbhash: z.string().nullable(),
      blurhash: z.string().nullable(),
    })
    .optional(),
});

const RECORD_SUFFIX = ".json";
/** How many record files the initial load reads at once. */
const LOAD_CONCURRENCY = 32;

/** In-memory view of every record: by id, per owner and per stage, the lists in repository order. */
interface Index {
  byId: Map<string, ImageRecord>;
  byOwner: Map<string, ImageRecord[]>;
  byStage: Map<KeyKind, ImageRecord[]>;
}

function ownerKey(accountId: string, stage: KeyKind): string {
  return `${stage}\u0000${accountId}`;
}

/** Position of `record` in a list sorted by {@link compareNewestFirst} (binary search). */
function positionOf(sorted: readonly ImageRecord[], record: ImageRecord): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareNewestFirst(sorted[middle] as ImageRecord, record) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function emptyIndex(): Index {
  return { byId: new Map(), byOwner: new Map(), byStage: new Map() };
}

function addToIndex(index: Index, record: ImageRecord): void {
  removeFromIndex(index, record.id);
  index.byId.set(record.id, record);
  const owner = ownerKey(record.accountId, record.stage);
  const owned = index.byOwner.get(owner) ?? [];
  const staged = index.byStage.get(record.stage) ?? [];
  index.byOwner.set(owner, owned);
  index.byStage.set(record.stage, staged);
  for (const list of [owned, staged]) list.splice(positionOf(list, record), 0, record);
}

function removeFromIndex(index: Index, id: string): void {
  const existing = index.byId.get(id);
  if (existing === undefined) return;
  index.byId.delete(id);
  for (const list of [
    index.byOwner.get(ownerKey(existing.accountId, existing.stage)),
    index.byStage.get(existing.stage),
  ]) {
    if (list === undefined) continue;
    const position = positionOf(list, existing);
    if (list[position] === existing) list.splice(position, 1);
  }
}

function duplicateError(id: string, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.INTERNAL, `An image with id ${id} already exists.`, { cause });
}

/**
 * An ImageRepository on the local filesystem: one JSON file per record, `<root>/records/<id>.json`,
 * each written crash-safely (temp file → `fsync` → `rename`, or `link` for inserts → directory
 * `fsync`; delete = `unlink` → directory `fsync`). Nothing acknowledged is lost on a crash or
 * restart.
 *
 * Reads are served from an in-memory index (by id, per owner and per stage, kept in repository
 * order) that is built once from the record files on first use and then kept up to date. Listing
 * uses the core `paginate` helper on the owner's sorted list, so it never touches the disk.
 *
 * Concurrency:
 * - Within a process every operation is serialised, so each one is atomic.
 * - Several processes on the same machine may share the directory. Every write appends the record
 *   id to `<root>/changes.log`; before each operation a process checks the log's size (one `stat`)
 *   and re-reads only the records named in new lines, so a write acknowledged in one process is
 *   visible to every later read in the others. `insert` (via `link(2)`) and `delete` (via
 *   `unlink(2)`) are atomic across processes: a duplicate id is rejected and only one delete
 *   returns `true`. `update` is last-writer-wins across processes, and an update racing a delete of
 *   the same id in another process may bring the record back. If a process dies between writing a
 *   record and appending to the log, other running processes miss that one change until they
 *   restart or the log rolls over.
 * - Not for network filesystems: `link`, `rename` and `O_APPEND` semantics are only relied upon
 *   on local ones. Ids are file names, so the filesystem must be case-sensitive.
 *
 * @example
 * ```ts
 * const images = createFsImageRepository({ root: "/var/lib/pixport/metadata" });
 * await images.sweepTemporaryFiles(); // at startup
 * ```
 */
export function createFsImageRepository(options: FsImageRepositoryOptions): FsImageRepository {
  const parsed = parseFsOptions(fsImageRepositoryOptionsSchema, options, "createFsImageRepository");
  const root = path.resolve(parsed.root);
  const recordsDirectory = path.join(root, "records");
  const changeLogPath = path.join(root, "changes.log");
  const fs: FsPromises = parsed.fs ?? defaultFs;
  // Every read checks the change log's size, so another process's writes are seen at once. On the
  // real filesystem that check is a synchronous stat: a few microseconds on a local disk, where the
  // promise API's thread-pool round trip cost about 15 % of a delivered variant's CPU. (An injected
  // `fs`, for fault tests, keeps its own stat.)
  const statChangeLog: () => Promise<{ ino: number; size: number }> =
    parsed.fs === undefined
      ? async () => {
          const info = statSync(changeLogPath, { throwIfNoEntry: false });
          if (info === undefined)
            throw Object.assign(new Error(`ENOENT: ${changeLogPath}`), { code: "ENOENT" });
          return info;
        }
      : () => fs.stat(changeLogPath);
  const logger: Logger = parsed.logger ?? silentLogger;
  const lock = createKeyedLock();

  let index: Index | undefined;
  /** Identity and read position of the change log this process follows. */
  let changeLog = { inode: -1, offset: 0 };

  function recordPath(id: string): string {
    return path.join(recordsDirectory, `${id}${RECORD_SUFFIX}`);
  }

  async function readRecord(id: string): Promise<ImageRecord | null> {
    let text: string;
    try {
      text = await fs.readFile(recordPath(id), "utf8");
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    let parsedRecord: ImageRecord | undefined;
    let cause: unknown;
    try {
      const result = recordSchema.safeParse(JSON.parse(text));
      if (result.success && result.data.id === id) parsedRecord = result.data;
      else cause = result.error;
    } catch (error) {
      cause = error;
    }
    if (parsedRecord === undefined) {
      throw new ImagePipelineError(ErrorCodes.INTERNAL, `The record file of image ${id} is corrupt.`, {
        cause,
      });
    }
    return parsedRecord;
  }

  /** Builds the index from every record file. The change log position is taken first, so nothing written meanwhile is missed. */
  async function load(): Promise<Index> {
    await fs.mkdir(recordsDirectory, { recursive: true });
    const handle = await fs.open(changeLogPath, "a");
    try {
      const info = await handle.stat();
      changeLog = { inode: info.ino, offset: info.size };
    } finally {
      await handle.close();
    }
    const ids = (await fs.readdir(recordsDirectory))
      .filter((name) => name.endsWith(RECORD_SUFFIX) && !isTemporaryFileName(name))
      .map((name) => name.slice(0, -RECORD_SUFFIX.length))
      .filter((id) => RECORD_ID_PATTERN.test(id));
    const fresh = emptyIndex();
    for (let start = 0; start < ids.length; start += LOAD_CONCURRENCY) {
      const batch = ids.slice(start, start + LOAD_CONCURRENCY);
      const records = await Promise.all(
        batch.map((id) =>
          readRecord(id).catch((error: unknown) => {
            // One damaged file must not take every other image down with it.
            logger.warn?.("Skipping an unreadable image record file.", { id, error });
            return null;
          }),
        ),
      );
      for (const record of records) if (record !== null) addToIndex(fresh, record);
    }
    index = fresh;
    return fresh;
  }

  /** Brings the index up to date with writes of other processes (see the change log). */
  async function refresh(): Promise<Index> {
    if (index === undefined) return load();
    let info: { ino: number; size: number };
    try {
      info = await statChangeLog();
    } catch (error) {
      if (!isMissing(error)) throw error;
      return load();
    }
    if (info.ino !== changeLog.inode || info.size < changeLog.offset) return load();
    if (info.size === changeLog.offset) return index;
    const handle = await fs.open(changeLogPath, "r");
    let text: string;
    try {
      const buffer = Buffer.alloc(info.size - changeLog.offset);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, changeLog.offset);
      text = buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      await handle.close();
    }
    // Only complete lines; a line still being appended is read next time.
    const complete = text.slice(0, text.lastIndexOf("\n") + 1);
    const current = index;
    for (const id of new Set(complete.split("\n"))) {
      if (!RECORD_ID_PATTERN.test(id)) continue;
      const record = await readRecord(id);
      if (record === null) removeFromIndex(current, id);
      else addToIndex(current, record);
    }
    changeLog.offset += Buffer.byteLength(complete);
    return current;
  }

  /** Tells other processes that `id` changed, and rolls the log over when it grew too large. */
  async function announce(id: string): Promise<void> {
    // The leading newline ends a line that a crashed writer may have left unfinished.
    const line = `\n${id}\n`;
    try {
      const handle = await fs.open(changeLogPath, "a");
      try {
        await handle.writeFile(line);
        const info = await handle.stat();
        // Skip our own line when nobody else appended since our last read.
        if (info.ino === changeLog.inode && info.size === changeLog.offset + line.length) {
          changeLog.offset = info.size;
        }
      } finally {
        await handle.close();
      }
      if (changeLog.offset > parsed.changeLogMaxBytes) {
        await writeFileAtomic(fs, changeLogPath, "");
        // Lines other processes appended to the old log may not have been read: rebuild.
        await load();
      }
    } catch (error) {
      // The record itself is durable; only other processes' freshness suffers until they reload.
      logger.warn?.("Could not append to the image change log.", { id, error });
    }
  }

  /**
   * The in-memory index and the change-log offset are shared state: every read and every index
   * update runs under one short lock. Durable file writes (with their fsyncs) run outside it, under
   * a per-record lock, so concurrent writes of different images do not queue behind each other's
   * disk syncs.
   */
  function withIndex<T>(task: () => Promise<T>): Promise<T> {
    return lock.run("repository", task);
  }

  function run<T>(action: string, task: () => Promise<T>): Promise<T> {
    return withIndex(task).catch((error: unknown) => {
      throw toStorageError(error, action);
    });
  }

  function write<T>(action: string, id: string, task: () => Promise<T>): Promise<T> {
    return lock.run(`record:${id}`, task).catch((error: unknown) => {
      throw toStorageError(error, action);
    });
  }

  return {
    root,

    insert(record) {
      // A record the loader could not read back would vanish at the next restart: refuse it now.
      const checked = recordSchema.safeParse(record);
      if (!checked.success) {
        const fields = checked.error.issues.map((issue) => issue.path.join(".")).join(", ");
        return Promise.reject(
          new TypeError(
            `Expected an image record with an id matching ${RECORD_ID_PATTERN} and valid fields, received invalid ${fields} for id ${JSON.stringify(record.id)}`,
          ),
        );
      }
      const copy = checked.data;
      return write("inserting an image record", copy.id, async () => {
        if ((await withIndex(refresh)).byId.has(copy.id)) throw duplicateError(copy.id);
        try {
          await writeFileAtomic(fs, recordPath(copy.id), JSON.stringify(copy), { exclusive: true });
        } catch (error) {
          if (errorCode(error) !== "EEXIST") throw error;
          // Another process inserted it and has not announced it yet.
          const existing = await readRecord(copy.id);
          if (existing !== null) await withIndex(async () => addToIndex(await refresh(), existing));
          throw duplicateError(copy.id, error);
        }
        await withIndex(async () => {
          addToIndex(await refresh(), copy);
          await announce(copy.id);
        });
      });
    },

    get(id) {
      if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(null);
      return run("reading an image record", async () => {
        const record = (await refresh()).byId.get(id);
        return record === undefined ? null : { ...record };
      });
    },

    update(id, patch) {
      if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(null);
      return write("updating an image record", id, async () => {
        const existing = (await withIndex(refresh)).byId.get(id);
        if (existing === undefined) return null;
        if (patch.url === undefined && patch.facts === undefined) return { ...existing };
        const updated: ImageRecord = { ...existing };
        if (patch.url !== undefined) updated.url = patch.url;
        if (patch.facts !== undefined) updated.facts = { ...patch.facts };
        await writeFileAtomic(fs, recordPath(id), JSON.stringify(updated));
        await withIndex(async () => {
          addToIndex(await refresh(), updated);
          await announce(id);
        });
        return { ...updated };
      });
    },

    delete(id) {
      if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(false);
      return write("deleting an image record", id, async () => {
        try {
          await fs.unlink(recordPath(id));
        } catch (error) {
          if (!isMissing(error)) throw error;
          await withIndex(async () => removeFromIndex(await refresh(), id));
          return false;
        }
        await syncDirectory(fs, recordsDirectory);
        await withIndex(async () => {
          removeFromIndex(await refresh(), id);
          await announce(id);
        });
        return true;
      });
    },

    list(query) {
      return run("listing image records", async () => {
        const owned = (await refresh()).byOwner.get(ownerKey(query.accountId, query.stage)) ?? [];
        const page = paginate(owned, query);
        return page === null ? null : { ...page, items: page.items.map((record) => ({ ...record })) };
      });
    },

    listCreatedBefore(query) {
      return run("listing expired image records", async () => {
        const staged = (await refresh()).byStage.get(query.stage) ?? [];
        const result: ImageRecord[] = [];
        // The list is newest first, so its tail holds the oldest records.
        for (let position = staged.length - 1; position >= 0 && result.length < query.limit; position -= 1) {
          const record = staged[position] as ImageRecord;
          if (record.createdAt >= query.createdBefore) break;
          result.push({ ...record });
        }
        return result;
      });
    },

    sweepTemporaryFiles(sweepOptions = {}) {
      return run("sweeping temporary files", async () => {
        const options = { ...sweepOptions, recursive: false };
        return (
          (await sweepTemporaryFiles(fs, recordsDirectory, options)) +
          (await sweepTemporaryFiles(fs, root, options))
        );
      });
    },
  };
}
