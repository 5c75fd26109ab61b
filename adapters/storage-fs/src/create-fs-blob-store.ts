import type { Dirent } from "node:fs";
import path from "node:path";
import type { BlobInfo, BlobMetadata, BlobStore } from "@pixport/core";
import { z } from "zod";
import {
  type FsPromises,
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  syncDirectory,
  writeFileAtomic,
} from "./atomic-write.js";
import {
  checkKey,
  ensureDirectory,
  existingDirectory,
  locate,
  openBlob,
  removeEmptyFolders,
} from "./blob-paths.js";
import { metadataFileName, readMetadata, sidecarFor } from "./blob-sidecar.js";
import { errorCode, isMissing, toStorageError } from "./fs-errors.js";
import { createKeyedLock, type KeyedLock } from "./keyed-lock.js";
import { defaultFs, fsSchema, parseFsOptions, rootSchema } from "./options.js";

/** Options of {@link createFsBlobStore}, validated by {@link fsBlobStoreOptionsSchema}. */
export const fsBlobStoreOptionsSchema = z.object({
  /**
   * Directory that holds the blobs, absolute or relative to the working directory. Created on
   * first use when missing. Blob `images/a.png` is the file `<root>/images/a.png`, so the directory
   * can be served as-is by a static file server (public copies).
   */
  root: rootSchema,
  /**
   * The `node:fs/promises` functions to use; for fault-injection tests.
   * @default node:fs/promises
   */
  fs: fsSchema.optional(),
});

/** Options of {@link createFsBlobStore}. */
export type FsBlobStoreOptions = z.input<typeof fsBlobStoreOptionsSchema>;

/** A {@link BlobStore} on the local filesystem, with crash-recovery housekeeping. */
export interface FsBlobStore extends BlobStore {
  /** The absolute root directory (as configured, before resolving symbolic links). */
  readonly root: string;
  /**
   * Removes temp files that crashed writes left under the root and resolves how many were removed.
   * Never runs by itself: call it at startup and/or on a timer. Temp files are invisible to `get`
   * and `stat` either way.
   */
  sweepTemporaryFiles(options?: SweepTemporaryFilesOptions): Promise<number>;
}

/**
 * A BlobStore that keeps one file per key under `root`, with content type and cache control in a
 * hidden sidecar next to it (`<dir>/.<name>~meta.json`).
 *
 * - The sidecar is only written when the metadata does not follow from the file extension
 *   (an image format's extension, such as `.jpg`, `.jpeg`, `.gif` or `.tiff`, or `.json`, with no
 *   `cacheControl`).
 * - Writes are crash-safe: sidecar first, then the bytes, each through temp file → `fsync` →
 *   `rename` → directory `fsync`. A file under its final name is always complete.
 * - Every path stays inside the root: keys are checked with `assertBlobKey` (and may not end with
 *   `/`), then resolved and compared against `root + path.sep`; the real path of the parent
 *   directory must be inside the real root, and the blob file itself must not be a symbolic link.
 *   A link leading out of the root fails with `INTERNAL`.
 * - Puts and deletes of one key are serialised inside the process, so bytes and sidecar always
 *   come from the same put. Across processes each file is atomic on its own, but two processes
 *   racing on one key may pair one put's bytes with the other's metadata.
 * - A key cannot be both a blob and the folder of other keys (`a` and `a/b`); such a put throws a
 *   `TypeError`. pixport's own keys never collide this way.
 * - `ENOSPC`, `EIO`, `EACCES`, `EROFS` and similar faults throw `STORAGE_UNAVAILABLE` with the
 *   original error as `cause`.
 *
 * @example
 * ```ts
 * const blobStore = createFsBlobStore({ root: "/var/lib/pixport/blobs" });
 * await blobStore.sweepTemporaryFiles(); // at startup
 * await blobStore.put("images/a.png", bytes, { contentType: "image/png" });
 * ```
 */
export function createFsBlobStore(options: FsBlobStoreOptions): FsBlobStore {
  const parsed = parseFsOptions(fsBlobStoreOptionsSchema, options, "createFsBlobStore");
  const root = path.resolve(parsed.root);
  const fs: FsPromises = parsed.fs ?? defaultFs;
  const locks = createKeyedLock();
  let realRoot: Promise<string> | undefined;

  /** The real path of the root, created on first use; retried after a failure. */
  function ready(): Promise<string> {
    realRoot ??= (async () => {
      await fs.mkdir(root, { recursive: true });
      return fs.realpath(root);
    })().catch((error: unknown) => {
      realRoot = undefined;
      throw error;
    });
    return realRoot;
  }

  const store: Store = { fs, ready, locks };
  return {
    root,
    put: (key, data, metadata, putOptions = {}) => putBlob(store, key, data, metadata, putOptions),
    get: (key) => getBlob(store, key),
    stat: (key) => statBlob(store, key),
    delete: (key) => deleteBlob(store, key),
    list: (prefix) => listBlobs(store, prefix),
    async sweepTemporaryFiles(sweepOptions = {}) {
      try {
        return await sweepTemporaryFiles(fs, await ready(), { ...sweepOptions, recursive: true });
      } catch (error) {
        throw toStorageError(error, "sweeping temporary files");
      }
    },
  };
}

/** What the operations of one store share. */
interface Store {
  fs: FsPromises;
  /** The real path of the root, created on first use; retried after a failure. */
  ready(): Promise<string>;
  /** Puts and deletes of one key run one at a time. */
  locks: KeyedLock;
}

async function putBlob(
  { fs, ready, locks }: Store,
  key: string,
  data: Uint8Array,
  metadata: BlobMetadata,
  options: Parameters<BlobStore["put"]>[3],
): Promise<void> {
  const durable = options?.durable !== false;
  checkKey(key);
  // Copy now: the caller may reuse its buffer while the write is in flight.
  const bytes = Buffer.from(data);
  // A sidecar is written only when the metadata does not follow from the file name.
  const sidecar = sidecarFor(key, metadata);
  try {
    const real = await ready();
    const { directory, name } = locate(real, key);
    await locks.run(key, async () => {
      // A delete of the last blob of this folder may remove the folder between its creation
      // and the write below (ENOENT): the folder is made again and the write retried.
      for (let attempt = 1; ; attempt += 1) {
        try {
          await writeIn(await ensureDirectory(fs, real, directory, key));
          return;
        } catch (error) {
          if (!isMissing(error) || attempt >= 3) throw error;
        }
      }
    });
    async function writeIn(resolved: string) {
      const sidecarPath = path.join(resolved, metadataFileName(name));
      if (sidecar === null) {
        // One file and one fsync fewer. A stale sidecar of an earlier put goes first, so a crash
        // never pairs the new bytes with old metadata.
        await fs.unlink(sidecarPath).catch((error: unknown) => {
          if (!isMissing(error)) throw error;
        });
      } else {
        // Sidecar first: a crash between the two writes leaves a sidecar without bytes
        // (invisible), never bytes with the wrong metadata. One directory sync after both
        // renames makes both names durable.
        await writeFileAtomic(fs, sidecarPath, sidecar, { syncDirectory: false, durable });
      }
      await writeFileAtomic(fs, path.join(resolved, name), bytes, { durable });
    }
  } catch (error) {
    const code = errorCode(error);
    if (code === "EEXIST" || code === "ENOTDIR" || code === "EISDIR" || code === "ENOTEMPTY") {
      throw conflictError(key, error);
    }
    if (code === "ENAMETOOLONG") {
      throw new TypeError(`Expected a blob key with shorter segments, received ${JSON.stringify(key)}`, {
        cause: error,
      });
    }
    throw toStorageError(error, "writing a blob");
  }
}

async function getBlob({ fs, ready }: Store, key: string): Promise<Uint8Array | null> {
  checkKey(key);
  try {
    const opened = await openBlob(fs, await ready(), key);
    if (opened === null) return null;
    let buffer: Buffer;
    try {
      buffer = await opened.handle.readFile();
    } finally {
      await opened.handle.close();
    }
    // A fresh, unshared buffer can be handed out as is; a pooled one is copied.
    return buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength
      ? new Uint8Array(buffer.buffer, 0, buffer.byteLength)
      : new Uint8Array(buffer);
  } catch (error) {
    throw toStorageError(error, "reading a blob");
  }
}

async function statBlob({ fs, ready }: Store, key: string): Promise<BlobInfo | null> {
  checkKey(key);
  try {
    const opened = await openBlob(fs, await ready(), key);
    if (opened === null) return null;
    let size: number;
    try {
      size = (await opened.handle.stat()).size;
    } finally {
      await opened.handle.close();
    }
    return { size, ...(await readMetadata(fs, opened.directory, opened.name, key)) };
  } catch (error) {
    throw toStorageError(error, "reading blob metadata");
  }
}

async function deleteBlob({ fs, ready, locks }: Store, key: string): Promise<void> {
  checkKey(key);
  try {
    const real = await ready();
    const { directory, name } = locate(real, key);
    await locks.run(key, async () => {
      const resolved = await existingDirectory(fs, real, directory, key);
      if (resolved === null) return;
      // Bytes first, sidecar second: a crash in between leaves an invisible sidecar.
      for (const file of [name, metadataFileName(name)]) {
        try {
          await fs.unlink(path.join(resolved, file));
        } catch (error) {
          // EISDIR/EPERM: the key names a folder of other keys, not a blob.
          if (!isMissing(error) && errorCode(error) !== "EISDIR") throw error;
        }
      }
      await syncDirectory(fs, resolved);
      await removeEmptyFolders(fs, real, resolved);
    });
  } catch (error) {
    throw toStorageError(error, "deleting a blob");
  }
}

async function* listBlobs(
  { fs, ready }: Store,
  prefix: string,
): AsyncGenerator<{ key: string; modifiedAt: Date }> {
  let real: string;
  try {
    real = await ready();
  } catch (error) {
    throw toStorageError(error, "listing blobs");
  }
  const base = path.join(
    real,
    ...prefix
      .split("/")
      .filter(Boolean)
      .slice(0, prefix.endsWith("/") ? undefined : -1),
  );
  let entries: Dirent[];
  try {
    entries = (await fs.readdir(base, { recursive: true, withFileTypes: true })) as unknown as Dirent[];
  } catch (error) {
    if (isMissing(error)) return;
    throw toStorageError(error, "listing blobs");
  }
  for (const entry of entries) {
    // Temp files, sidecars and other internal names all contain "~"; keys never do.
    if (!entry.isFile() || entry.name.includes("~")) continue;
    const file = path.join(entry.parentPath, entry.name);
    const key = path.relative(real, file).split(path.sep).join("/");
    if (!key.startsWith(prefix)) continue;
    const info = await fs.stat(file).catch(() => null);
    if (info !== null) yield { key, modifiedAt: info.mtime };
  }
}

function conflictError(key: string, cause: unknown): TypeError {
  return new TypeError(
    `Expected a blob key that is neither a folder of other keys nor below another blob, received ${JSON.stringify(key)}`,
    { cause },
  );
}
