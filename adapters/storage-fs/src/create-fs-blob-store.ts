import type { Dirent } from "node:fs";
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import {
  type BlobInfo,
  type BlobMetadata,
  type BlobStore,
  ErrorCodes,
  ImagePipelineError,
} from "@pixport/core";
import { assertBlobKey, formatFromSpelling, MIME_TYPES } from "@pixport/core/adapter-kit";
import { z } from "zod";
import {
  type FsPromises,
  type SweepTemporaryFilesOptions,
  sweepTemporaryFiles,
  syncDirectory,
  writeFileAtomic,
} from "./atomic-write.js";
import { isInside, resolveInside } from "./containment.js";
import { errorCode, escapedRootError, isMissing, toStorageError } from "./fs-errors.js";
import { createKeyedLock } from "./keyed-lock.js";
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

/** Sidecar file that holds the metadata of blob file `name`; `~` keeps it out of the key space. */
function metadataFileName(name: string): string {
  return `.${name}~meta.json`;
}

const storedMetadataSchema = z.object({ contentType: z.string(), cacheControl: z.string().optional() });

/** Sent when a blob file exists without its sidecar (placed by hand): bytes of unknown type. */
const UNKNOWN_CONTENT_TYPE = "application/octet-stream";

/** The content type of a blob without a sidecar: from its file extension (any spelling of an image format, or `.json`). */
function derivedContentType(name: string): string {
  const dot = name.lastIndexOf(".");
  if (dot === -1) return UNKNOWN_CONTENT_TYPE;
  const extension = name.slice(dot + 1);
  if (extension === "json") return "application/json";
  const format = formatFromSpelling(extension);
  return format === null ? UNKNOWN_CONTENT_TYPE : MIME_TYPES[format];
}

// O_NOFOLLOW makes opening a symbolic link fail with ELOOP; 0 where the platform lacks it (Windows).
const READ_NO_FOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

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

  function checkKey(key: string): void {
    assertBlobKey(key);
    if (key.endsWith("/")) {
      throw new TypeError(
        `Expected a blob key that does not end with "/" for key, received ${JSON.stringify(key)}`,
      );
    }
  }

  /** Lexical location of a key below the real root. */
  function locate(real: string, key: string): { directory: string; name: string } {
    const file = resolveInside(real, key);
    return { directory: path.dirname(file), name: path.basename(file) };
  }

  /** Real path of an existing directory, checked to be inside the root; `null` when missing. */
  async function existingDirectory(real: string, directory: string, key: string): Promise<string | null> {
    try {
      const resolved = await fs.realpath(directory);
      if (!isInside(real, resolved)) throw escapedRootError(`key ${JSON.stringify(key)}`);
      return resolved;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  /**
   * Creates the directory of a key and returns its real path. The deepest existing ancestor is
   * resolved and checked first, so `mkdir` never walks through a link that leaves the root; every
   * new directory is made durable in its parent.
   */
  async function ensureDirectory(real: string, directory: string, key: string): Promise<string> {
    const missing: string[] = [];
    let existing = directory;
    let resolved = await existingDirectory(real, existing, key);
    while (resolved === null) {
      if (existing === real) {
        // The root itself vanished (removed while running): recreate it rather than climb out of it.
        await fs.mkdir(real, { recursive: true });
        resolved = real;
        break;
      }
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
      resolved = await existingDirectory(real, existing, key);
    }
    let current = resolved;
    for (const segment of missing) {
      const next = path.join(current, segment);
      try {
        await fs.mkdir(next);
        await syncDirectory(fs, current);
      } catch (error) {
        if (errorCode(error) !== "EEXIST") throw error;
      }
      current = next;
    }
    const final = await fs.realpath(directory);
    if (!isInside(real, final)) throw escapedRootError(`key ${JSON.stringify(key)}`);
    return final;
  }

  /** Opens a blob file for reading without following a link; `null` when missing or not a file. */
  async function openBlob(
    key: string,
  ): Promise<{ handle: FileHandle; directory: string; name: string } | null> {
    const real = await ready();
    const { directory, name } = locate(real, key);
    const resolved = await existingDirectory(real, directory, key);
    if (resolved === null) return null;
    let handle: FileHandle;
    try {
      handle = await fs.open(path.join(resolved, name), READ_NO_FOLLOW);
    } catch (error) {
      if (isMissing(error)) return null;
      if (errorCode(error) === "ELOOP")
        throw escapedRootError(`key ${JSON.stringify(key)} is a symbolic link`);
      throw error;
    }
    const info = await handle.stat().catch(async (error: unknown) => {
      await handle.close();
      throw error;
    });
    if (!info.isFile()) {
      await handle.close();
      return null;
    }
    return { handle, directory: resolved, name };
  }

  async function readMetadata(directory: string, name: string, key: string): Promise<BlobMetadata> {
    let text: string;
    try {
      text = await fs.readFile(path.join(directory, metadataFileName(name)), "utf8");
    } catch (error) {
      if (isMissing(error)) return { contentType: derivedContentType(name) };
      throw error;
    }
    let stored: z.infer<typeof storedMetadataSchema>;
    try {
      stored = storedMetadataSchema.parse(JSON.parse(text));
    } catch (error) {
      throw new ImagePipelineError(ErrorCodes.INTERNAL, `The metadata file of blob ${key} is corrupt.`, {
        cause: error,
      });
    }
    return stored.cacheControl === undefined
      ? { contentType: stored.contentType }
      : { contentType: stored.contentType, cacheControl: stored.cacheControl };
  }

  /**
   * Removes `directory` and then each parent below the root while they are empty (a variant
   * cache's `variants/{image_id}/` once its last variant is gone). `rmdir` only removes an empty
   * folder, so a folder that a put has just filled stays.
   */
  async function removeEmptyFolders(real: string, directory: string): Promise<void> {
    if (fs.rmdir === undefined) return;
    let current = directory;
    while (current !== real && isInside(real, current)) {
      try {
        await fs.rmdir(current);
      } catch {
        return; // not empty (ENOTEMPTY/EEXIST), already gone, or not ours to remove
      }
      current = path.dirname(current);
    }
  }

  function conflictError(key: string, cause: unknown): TypeError {
    return new TypeError(
      `Expected a blob key that is neither a folder of other keys nor below another blob, received ${JSON.stringify(key)}`,
      { cause },
    );
  }

  return {
    root,

    async put(key, data, metadata, options = {}) {
      const durable = options.durable !== false;
      checkKey(key);
      // Copy now: the caller may reuse its buffer while the write is in flight.
      const bytes = Buffer.from(data);
      // A sidecar is written only when the metadata does not follow from the file name.
      const derivable =
        metadata.cacheControl === undefined &&
        metadata.contentType === derivedContentType(key.slice(key.lastIndexOf("/") + 1));
      const sidecar = derivable
        ? null
        : JSON.stringify(
            metadata.cacheControl === undefined
              ? { contentType: metadata.contentType }
              : { contentType: metadata.contentType, cacheControl: metadata.cacheControl },
          );
      try {
        const real = await ready();
        const { directory, name } = locate(real, key);
        await locks.run(key, async () => {
          // A delete of the last blob of this folder may remove the folder between its creation
          // and the write below (ENOENT): the folder is made again and the write retried.
          for (let attempt = 1; ; attempt += 1) {
            try {
              await writeIn(await ensureDirectory(real, directory, key));
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
    },

    async get(key) {
      checkKey(key);
      try {
        const opened = await openBlob(key);
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
    },

    async stat(key): Promise<BlobInfo | null> {
      checkKey(key);
      try {
        const opened = await openBlob(key);
        if (opened === null) return null;
        let size: number;
        try {
          size = (await opened.handle.stat()).size;
        } finally {
          await opened.handle.close();
        }
        return { size, ...(await readMetadata(opened.directory, opened.name, key)) };
      } catch (error) {
        throw toStorageError(error, "reading blob metadata");
      }
    },

    async delete(key) {
      checkKey(key);
      try {
        const real = await ready();
        const { directory, name } = locate(real, key);
        await locks.run(key, async () => {
          const resolved = await existingDirectory(real, directory, key);
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
          await removeEmptyFolders(real, resolved);
        });
      } catch (error) {
        throw toStorageError(error, "deleting a blob");
      }
    },

    async *list(prefix) {
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
    },

    async sweepTemporaryFiles(sweepOptions = {}) {
      try {
        return await sweepTemporaryFiles(fs, await ready(), { ...sweepOptions, recursive: true });
      } catch (error) {
        throw toStorageError(error, "sweeping temporary files");
      }
    },
  };
}
