import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";

/** The `code` of a Node.js system error (`ENOENT`, ...), or `undefined`. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/** Codes that mean "the path does not name a stored item": absence, not an error. */
export function isMissing(error: unknown): boolean {
  const code = errorCode(error);
  return code === "ENOENT" || code === "ENOTDIR";
}

/**
 * Faults of the disk or its configuration rather than of one request. Each maps to
 * `STORAGE_UNAVAILABLE` with a hint on how to fix it; the original error stays the `cause`.
 */
const UNAVAILABLE_HINTS: Readonly<Record<string, string>> = {
  ENOSPC: "the disk is full",
  EDQUOT: "the disk quota is exhausted",
  EIO: "the disk reported an I/O error",
  EACCES: "the process may not access the storage directory; check its owner and mode",
  EPERM: "the process may not access the storage directory; check its owner and mode",
  EROFS: "the filesystem is mounted read-only",
  EMFILE: "the process has too many open files",
  ENFILE: "the system has too many open files",
  EBUSY: "the file is busy",
  EAGAIN: "the filesystem asked to try again",
  ETIMEDOUT: "the filesystem timed out",
  ESTALE: "a network filesystem handle went stale",
};

/** Faults that last until an operator acts (frees space, fixes a mount): clients retry later. */
const NEEDS_OPERATOR: ReadonlySet<string> = new Set(["ENOSPC", "EDQUOT", "EACCES", "EPERM", "EROFS"]);

/**
 * Translates a filesystem error at the adapter boundary: pixport errors and `TypeError`s pass
 * through, disk faults become `STORAGE_UNAVAILABLE` (message without paths, `cause` kept), and
 * anything else is rethrown unchanged so the caller's generic 500 path logs it.
 */
export function toStorageError(error: unknown, action: string): unknown {
  if (isImagePipelineError(error) || error instanceof TypeError) return error;
  const code = errorCode(error);
  const hint = code === undefined ? undefined : UNAVAILABLE_HINTS[code];
  if (code === undefined || hint === undefined) return error;
  return new ImagePipelineError(
    ErrorCodes.STORAGE_UNAVAILABLE,
    `Filesystem storage is unavailable: ${action} failed with ${code} (${hint}).`,
    { cause: error, retryAfterSeconds: NEEDS_OPERATOR.has(code) ? 30 : 5 },
  );
}

/** The error for a path that resolves outside the root through a symbolic link. */
export function escapedRootError(subject: string): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.INTERNAL,
    `Refusing to follow a symbolic link out of the storage root (${subject}). Remove the link or move its target inside the root.`,
  );
}

/** Runs `task` and translates its filesystem errors with {@link toStorageError}. */
export function withStorageErrors<T>(action: string, task: () => Promise<T>): Promise<T> {
  return task().catch((error: unknown) => {
    throw toStorageError(error, action);
  });
}
