import path from "node:path";
import { type ApiKeyRecord, ErrorCodes, ImagePipelineError, type KeyStore } from "@pixport/core";
import { definedFields } from "@pixport/core/adapter-kit";
import { z } from "zod";
import {
  type FsPromises,
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  writeFileAtomic,
} from "./atomic-write.js";
import { isMissing, toStorageError } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
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
  const filePath = path.join(root, "keys.json");
  const fs: FsPromises = parsed.fs ?? defaultFs;
  const lock = createKeyedLock();
  let snapshot: Snapshot | undefined;

  async function read(): Promise<Snapshot> {
    let handle: Awaited<ReturnType<FsPromises["open"]>>;
    try {
      handle = await fs.open(filePath, "r");
    } catch (error) {
      if (!isMissing(error)) throw error;
      snapshot = { inode: null, size: 0, byHash: new Map() };
      return snapshot;
    }
    try {
      const info = await handle.stat();
      if (snapshot !== undefined && snapshot.inode === info.ino && snapshot.size === info.size)
        return snapshot;
      const text = await handle.readFile("utf8");
      let keys: ApiKeyRecord[];
      try {
        keys = keysFileSchema.parse(JSON.parse(text)).keys;
      } catch (error) {
        throw new ImagePipelineError(ErrorCodes.INTERNAL, "The key file keys.json is corrupt.", {
          cause: error,
        });
      }
      snapshot = { inode: info.ino, size: info.size, byHash: new Map(keys.map((key) => [key.hash, key])) };
      return snapshot;
    } finally {
      await handle.close();
    }
  }

  function translated<T>(action: string, task: () => Promise<T>): Promise<T> {
    return task().catch((error: unknown) => {
      throw toStorageError(error, action);
    });
  }

  return {
    root,

    findByHash(hash) {
      return translated("reading API keys", async () => {
        const record = (await read()).byHash.get(hash);
        return record === undefined ? null : { ...record };
      });
    },

    list() {
      return translated("reading API keys", async () =>
        [...(await read()).byHash.values()].map((record) => ({ ...record })),
      );
    },

    insert(record) {
      // A record that could not be read back would make keys.json unreadable for every caller.
      const checked = keyRecordSchema.safeParse(record);
      if (!checked.success) {
        const fields = checked.error.issues.map((issue) => issue.path.join(".")).join(", ");
        return Promise.reject(new TypeError(`Expected a valid API key record, received invalid ${fields}`));
      }
      const copy = checked.data;
      return translated("storing an API key", () =>
        lock.run("keys", async () => {
          const current = await read();
          if (
            current.byHash.has(copy.hash) ||
            [...current.byHash.values()].some((key) => key.id === copy.id)
          ) {
            throw new ImagePipelineError(
              ErrorCodes.INTERNAL,
              `A key with id ${copy.id} or the same hash already exists.`,
            );
          }
          const keys = [...current.byHash.values(), copy];
          await fs.mkdir(root, { recursive: true });
          await writeFileAtomic(fs, filePath, `${JSON.stringify({ keys }, null, 2)}\n`);
          // The next read re-reads the file: its identity changed with the rename.
        }),
      );
    },

    update(id, patch) {
      return translated("updating an API key", () =>
        lock.run("keys", async () => {
          const current = await read();
          const existing = [...current.byHash.values()].find((key) => key.id === id);
          if (existing === undefined) return null;
          const updated = keyRecordSchema.parse({ ...existing, ...definedFields(patch) });
          const keys = [...current.byHash.values()].map((key) => (key.id === id ? updated : key));
          await writeFileAtomic(fs, filePath, `${JSON.stringify({ keys }, null, 2)}\n`);
          return { ...updated };
        }),
      );
    },

    sweepTemporaryFiles(sweepOptions = {}) {
      return translated("sweeping temporary files", () =>
        sweepTemporaryFiles(fs, root, { ...sweepOptions, recursive: false }),
      );
    },
  };
}
