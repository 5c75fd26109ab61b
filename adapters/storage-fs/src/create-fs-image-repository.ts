import path from "node:path";
import {
  ErrorCodes,
  type ExpiredImagesQuery,
  ImagePipelineError,
  type ImageRecord,
  type ImageRecordPatch,
  type ImageRepository,
  type ListImagesQuery,
  silentLogger,
} from "@pixport/core";
import { paginate } from "@pixport/core/adapter-kit";
import { z } from "zod";
import {
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  syncDirectory,
  writeFileAtomic,
} from "./atomic-write.js";
import { errorCode, isMissing, toStorageError } from "./fs-errors.js";
import { ImageRecordFiles, RECORD_ID_PATTERN, recordSchema } from "./image-record-files.js";
import { addToIndex, ownerKey, removeFromIndex } from "./image-record-index.js";
import { createKeyedLock } from "./keyed-lock.js";
import { fsSchema, loggerSchema, parseFsOptions, rootSchema } from "./options.js";

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
  const files = new ImageRecordFiles({
    root,
    fs: parsed.fs,
    changeLogMaxBytes: parsed.changeLogMaxBytes,
    logger: parsed.logger ?? silentLogger,
  });
  const lock = createKeyedLock();
  const repository: Repository = {
    files,
    root,
    withIndex: (task) => lock.run("repository", task),
    write: (action, id, task) =>
      lock.run(`record:${id}`, task).catch((error: unknown) => {
        throw toStorageError(error, action);
      }),
  };
  return {
    root,
    insert: (record) => insertRecord(repository, record),
    get: (id) => getRecord(repository, id),
    update: (id, patch) => updateRecord(repository, id, patch),
    delete: (id) => deleteRecord(repository, id),
    list: (query) => listRecords(repository, query),
    listCreatedBefore: (query) => listCreatedBefore(repository, query),
    sweepTemporaryFiles: (sweepOptions = {}) => sweep(repository, sweepOptions),
  };
}

/** One repository's files and locks, shared by its operations. */
interface Repository {
  files: ImageRecordFiles;
  root: string;
  /**
   * The in-memory index and the change-log offset are shared state: every read and every index
   * update runs under one short lock. Durable file writes (with their fsyncs) run outside it, under
   * a per-record lock, so concurrent writes of different images do not queue behind each other's
   * disk syncs.
   */
  withIndex<T>(task: () => Promise<T>): Promise<T>;
  /** Runs a write of record `id` under its own lock; filesystem faults become storage errors. */
  write<T>(action: string, id: string, task: () => Promise<T>): Promise<T>;
}

/** Runs a read under the index lock; filesystem faults become storage errors. */
function run<T>(repository: Repository, action: string, task: () => Promise<T>): Promise<T> {
  return repository.withIndex(task).catch((error: unknown) => {
    throw toStorageError(error, action);
  });
}

function insertRecord({ files, withIndex, write }: Repository, record: ImageRecord): Promise<void> {
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
  const refresh = () => files.refresh();
  return write("inserting an image record", copy.id, async () => {
    if ((await withIndex(refresh)).byId.has(copy.id)) throw duplicateError(copy.id);
    try {
      await writeFileAtomic(files.fs, files.recordPath(copy.id), JSON.stringify(copy), { exclusive: true });
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
      // Another process inserted it and has not announced it yet.
      const existing = await files.readRecord(copy.id);
      if (existing !== null) await withIndex(async () => addToIndex(await refresh(), existing));
      throw duplicateError(copy.id, error);
    }
    await withIndex(async () => {
      addToIndex(await refresh(), copy);
      await files.announce(copy.id);
    });
  });
}

function getRecord(repository: Repository, id: string): Promise<ImageRecord | null> {
  if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(null);
  return run(repository, "reading an image record", async () => {
    const record = (await repository.files.refresh()).byId.get(id);
    return record === undefined ? null : { ...record };
  });
}

function updateRecord(
  { files, withIndex, write }: Repository,
  id: string,
  patch: ImageRecordPatch,
): Promise<ImageRecord | null> {
  if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(null);
  const refresh = () => files.refresh();
  return write("updating an image record", id, async () => {
    const existing = (await withIndex(refresh)).byId.get(id);
    if (existing === undefined) return null;
    if (patch.url === undefined && patch.facts === undefined) return { ...existing };
    const updated: ImageRecord = { ...existing };
    if (patch.url !== undefined) updated.url = patch.url;
    if (patch.facts !== undefined) updated.facts = { ...patch.facts };
    await writeFileAtomic(files.fs, files.recordPath(id), JSON.stringify(updated));
    await withIndex(async () => {
      addToIndex(await refresh(), updated);
      await files.announce(id);
    });
    return { ...updated };
  });
}

function deleteRecord({ files, withIndex, write }: Repository, id: string): Promise<boolean> {
  if (!RECORD_ID_PATTERN.test(id)) return Promise.resolve(false);
  const refresh = () => files.refresh();
  return write("deleting an image record", id, async () => {
    try {
      await files.fs.unlink(files.recordPath(id));
    } catch (error) {
      if (!isMissing(error)) throw error;
      await withIndex(async () => removeFromIndex(await refresh(), id));
      return false;
    }
    await syncDirectory(files.fs, files.recordsDirectory);
    await withIndex(async () => {
      removeFromIndex(await refresh(), id);
      await files.announce(id);
    });
    return true;
  });
}

function listRecords(repository: Repository, query: ListImagesQuery): ReturnType<ImageRepository["list"]> {
  return run(repository, "listing image records", async () => {
    const owned =
      (await repository.files.refresh()).byOwner.get(ownerKey(query.accountId, query.stage)) ?? [];
    const page = paginate(owned, query);
    return page === null ? null : { ...page, items: page.items.map((record) => ({ ...record })) };
  });
}

function listCreatedBefore(repository: Repository, query: ExpiredImagesQuery): Promise<ImageRecord[]> {
  return run(repository, "listing expired image records", async () => {
    const staged = (await repository.files.refresh()).byStage.get(query.stage) ?? [];
    const result: ImageRecord[] = [];
    // The list is newest first, so its tail holds the oldest records.
    for (let position = staged.length - 1; position >= 0 && result.length < query.limit; position -= 1) {
      const record = staged[position] as ImageRecord;
      if (record.createdAt >= query.createdBefore) break;
      result.push({ ...record });
    }
    return result;
  });
}

function sweep(repository: Repository, sweepOptions: SweepTemporaryFilesOptions): Promise<number> {
  const { files, root } = repository;
  return run(repository, "sweeping temporary files", async () => {
    const options = { ...sweepOptions, recursive: false };
    return (
      (await sweepTemporaryFiles(files.fs, files.recordsDirectory, options)) +
      (await sweepTemporaryFiles(files.fs, root, options))
    );
  });
}
