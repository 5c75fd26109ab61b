import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import { assertBlobKey } from "@pixport/core/adapter-kit";
import { type FsPromises, syncDirectory } from "./atomic-write.js";
import { isInside, resolveInside } from "./containment.js";
import { errorCode, escapedRootError, isMissing } from "./fs-errors.js";

// O_NOFOLLOW makes opening a symbolic link fail with ELOOP; 0 where the platform lacks it (Windows).
const READ_NO_FOLLOW = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);

export function checkKey(key: string): void {
  assertBlobKey(key);
  if (key.endsWith("/")) {
    throw new TypeError(
      `Expected a blob key that does not end with "/" for key, received ${JSON.stringify(key)}`,
    );
  }
}

/** Lexical location of a key below the real root. */
export function locate(real: string, key: string): { directory: string; name: string } {
  const file = resolveInside(real, key);
  return { directory: path.dirname(file), name: path.basename(file) };
}

/** Real path of an existing directory, checked to be inside the root; `null` when missing. */
export async function existingDirectory(
  fs: FsPromises,
  real: string,
  directory: string,
  key: string,
): Promise<string | null> {
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
export async function ensureDirectory(
  fs: FsPromises,
  real: string,
  directory: string,
  key: string,
): Promise<string> {
  const missing: string[] = [];
  let existing = directory;
  let resolved = await existingDirectory(fs, real, existing, key);
  while (resolved === null) {
    if (existing === real) {
      // The root itself vanished (removed while running): recreate it rather than climb out of it.
      await fs.mkdir(real, { recursive: true });
      resolved = real;
      break;
    }
    missing.unshift(path.basename(existing));
    existing = path.dirname(existing);
    resolved = await existingDirectory(fs, real, existing, key);
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
export async function openBlob(
  fs: FsPromises,
  real: string,
  key: string,
): Promise<{ handle: FileHandle; directory: string; name: string } | null> {
  const { directory, name } = locate(real, key);
  const resolved = await existingDirectory(fs, real, directory, key);
  if (resolved === null) return null;
  let handle: FileHandle;
  try {
    handle = await fs.open(path.join(resolved, name), READ_NO_FOLLOW);
  } catch (error) {
    if (isMissing(error)) return null;
    if (errorCode(error) === "ELOOP") throw escapedRootError(`key ${JSON.stringify(key)} is a symbolic link`);
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

/**
 * Removes `directory` and then each parent below the root while they are empty (a variant
 * cache's `variants/{image_id}/` once its last variant is gone). `rmdir` only removes an empty
 * folder, so a folder that a put has just filled stays.
 */
export async function removeEmptyFolders(fs: FsPromises, real: string, directory: string): Promise<void> {
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
