import path from "node:path";
import {
  type ApiKeyRecord,
  type ApiKeyRecordPatch,
  ErrorCodes,
  ImagePipelineError,
  type KeyStore,
} from "@pixport/core";
import { definedFields } from "@pixport/core/adapter-kit";
import { z } from "zod";
import {
  type FsPromises,
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  writeFileAtomic,
} from "./atomic-write.js";
import { isMissing, withStorageErrors } from "./fs-errors.js";
import { createKeyedLock, type KeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, parseFsOptions, rootSchema } from "./options.js";

/** Options of {@link createFsKeyStore}, validated by {@link fsKeyStoreOptionsSchema}. */
export const fsKeyStoreOptionsSchema = z.object({
  /**
   * Directory that holds `keys.json`, absolute or relative to the working directory. Created on
   * the first insert.
   */
  root: rootSchema,
  /**
   * The `node:fs/promises` functions to use; for fault-injection tests.
   * @default node:fs/promises
   */
  fs: fsSchema.optional(),
});

/** Options of {@link createFsKeyStore}. */
export type FsKeyStoreOptions = z.input<typeof fsKeyStoreOptionsSchema>;

/** A {@link KeyStore} on the local filesystem, with crash-recovery housekeeping. */
export interface FsKeyStore extends KeyStore {
  /** The absolute root directory. */
  readonly root: string;
  /** Removes temp files that crashed writes left in the root; resolves how many were removed. */
  sweepTemporaryFiles(options?: SweepTemporaryFilesOptions): Promise<number>;
}

const keyRecordSchema = z.object({
  id: z.string(),
  hash: z.string(),
  displayPrefix: z.string(),
  kind: z.enum(["test", "live"]),
  accountId: z.string(),
  createdAt: z.string(),
  rateLimitPerMinute: z.number().nullable().optional(),
  revoked: z.boolean().optional(),
});

const keysFileSchema = z.object({ keys: z.array(keyRecordSchema) });

interface Snapshot {
  /** Identity of the file the snapshot was read from; `null` while the file does not exist. */
  inode: number | null;
  size: number;
  byHash: Map<string, ApiKeyRecord>;
}

/**
 * A KeyStore on the local filesystem: every key record in one file, `<root>/keys.json`
 * (`{"keys":[...]}`), replaced crash-safely on each insert (temp file → `fsync` → `rename` →
 * directory `fsync`). Only SHA-256 hashes and display prefixes are stored, never keys.
 *
 * Reads come from a cached copy that is re-read whenever the file changed (one `stat` per call;
 * every insert renames a new, larger file into place), so inserts made by other processes are seen
 * by the next read. Inserts are serialised within the process; two processes inserting at the same
 * moment may lose one of the inserts, so let one process (or an admin tool, one at a time) manage
 * keys.
 *
 * @example
 * ```ts
 * const keys = createFsKeyStore({ root: "/var/lib/pixport/keys" });
 * await keys.insert({ id, hash: hashApiKey(key), displayPrefix, kind: "live", accountId, createdAt });
 * ```
 */
export function createFsKeyStore(options: FsKeyStoreOptions): FsKeyStore {
  const parsed = parseFsOptions(fsKeyStoreOptionsSchema, options, "createFsKeyStore");
  const root = path.resolve(parsed.root);
  const state: KeyFile = {
    root,
    filePath: path.join(root, "keys.json"),
    fs: parsed.fs ?? defaultFs,
    lock: createKeyedLock(),
    snapshot: undefined,
  };
  return {
    root,
    findByHash: (hash) =>
      withStorageErrors("reading API keys", async () => {
        const record = (await readKeys(state)).byHash.get(hash);
        return record === undefined ? null : { ...record };
      }),
    list: () =>
      withStorageErrors("reading API keys", async () =>
        [...(await readKeys(state)).byHash.values()].map((record) => ({ ...record })),
      ),
    insert: (record) => insertKey(state, record),
    update: (id, patch) => withStorageErrors("updating an API key", () => updateKey(state, id, patch)),
    sweepTemporaryFiles: (sweepOptions = {}) =>
      withStorageErrors("sweeping temporary files", () =>
        sweepTemporaryFiles(state.fs, root, { ...sweepOptions, recursive: false }),
      ),
  };
}

/** The key file of one store and its cached copy. */
interface KeyFile {
  readonly root: string;
  /** `<root>/keys.json`. */
  readonly filePath: string;
  readonly fs: FsPromises;
  /** Serialises this process's writes. */
  readonly lock: KeyedLock;
  snapshot: Snapshot | undefined;
}

/** The records, from the cached copy while the file is the one it was read from. */
async function readKeys(state: KeyFile): Promise<Snapshot> {
  let handle: Awaited<ReturnType<FsPromises["open"]>>;
  try {
    handle = await state.fs.open(state.filePath, "r");
  } catch (error) {
    if (!isMissing(error)) throw error;
    state.snapshot = { inode: null, size: 0, byHash: new Map() };
    return state.snapshot;
  }
  try {
    const info = await handle.stat();
    const cached = state.snapshot;
    if (cached !== undefined && cached.inode === info.ino && cached.size === info.size) return cached;
    const text = await handle.readFile("utf8");
    let keys: ApiKeyRecord[];
    try {
      keys = keysFileSchema.parse(JSON.parse(text)).keys;
    } catch (error) {
      throw new ImagePipelineError(ErrorCodes.INTERNAL, "The key file keys.json is corrupt.", {
        cause: error,
      });
    }
    state.snapshot = {
      inode: info.ino,
      size: info.size,
      byHash: new Map(keys.map((key) => [key.hash, key])),
    };
    return state.snapshot;
  } finally {
    await handle.close();
  }
}

function insertKey(state: KeyFile, record: ApiKeyRecord): Promise<void> {
  // A record that could not be read back would make keys.json unreadable for every caller.
  const checked = keyRecordSchema.safeParse(record);
  if (!checked.success) {
    const fields = checked.error.issues.map((issue) => issue.path.join(".")).join(", ");
    return Promise.reject(new TypeError(`Expected a valid API key record, received invalid ${fields}`));
  }
  const copy = checked.data;
  return withStorageErrors("storing an API key", () =>
    state.lock.run("keys", async () => {
      const current = await readKeys(state);
      if (current.byHash.has(copy.hash) || [...current.byHash.values()].some((key) => key.id === copy.id)) {
        throw new ImagePipelineError(
          ErrorCodes.INTERNAL,
          `A key with id ${copy.id} or the same hash already exists.`,
        );
      }
      const keys = [...current.byHash.values(), copy];
      await state.fs.mkdir(state.root, { recursive: true });
      await writeFileAtomic(state.fs, state.filePath, `${JSON.stringify({ keys }, null, 2)}\n`);
      // The next read re-reads the file: its identity changed with the rename.
    }),
  );
}

function updateKey(state: KeyFile, id: string, patch: ApiKeyRecordPatch): Promise<ApiKeyRecord | null> {
  return state.lock.run("keys", async () => {
    const current = await readKeys(state);
    const existing = [...current.byHash.values()].find((key) => key.id === id);
    if (existing === undefined) return null;
    const updated = keyRecordSchema.parse({ ...existing, ...definedFields(patch) });
    const keys = [...current.byHash.values()].map((key) => (key.id === id ? updated : key));
    await writeFileAtomic(state.fs, state.filePath, `${JSON.stringify({ keys }, null, 2)}\n`);
    return { ...updated };
  });
}
