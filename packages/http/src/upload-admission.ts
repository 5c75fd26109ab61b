import { ErrorCodes, ImagePipelineError } from "@pixport/core";

/** The upload slots of a handler: in progress at once, in all and per account. */
export interface UploadAdmission {
  /** Throws `OVERLOADED` (503, retry after 1 s) when no slot is free for this upload. */
  assertRoom(accountId: string | undefined): void;
  /** Takes a slot until the returned release is called (once the answer is built). */
  take(accountId: string | undefined): () => void;
}

/**
 * Bounds the uploads (multipart requests) a handler reads at once, from reading the body to the
 * answer, so the memory of upload bodies stays below `maxConcurrentUploads x maxUploadBytes`, and
 * one tenant cannot take every slot (`maxConcurrentUploadsPerAccount`, all its keys together).
 */
export function createUploadAdmission(limits: {
  maxConcurrentUploads: number;
  maxConcurrentUploadsPerAccount: number;
}): UploadAdmission {
  let inFlight = 0;
  /** Uploads in progress per account (entries removed at 0, so the map stays small). */
  const byAccount = new Map<string, number>();
  return {
    assertRoom(accountId) {
      if (inFlight >= limits.maxConcurrentUploads) {
        throw new ImagePipelineError(
          ErrorCodes.OVERLOADED,
          `The server is receiving ${inFlight} uploads already; retry later.`,
          { retryAfterSeconds: 1 },
        );
      }
      if (
        accountId !== undefined &&
        (byAccount.get(accountId) ?? 0) >= limits.maxConcurrentUploadsPerAccount
      ) {
        throw new ImagePipelineError(
          ErrorCodes.OVERLOADED,
          `This account already has ${limits.maxConcurrentUploadsPerAccount} uploads in progress; retry when one has finished.`,
          { retryAfterSeconds: 1 },
        );
      }
    },
    take(accountId) {
      inFlight += 1;
      if (accountId !== undefined) byAccount.set(accountId, (byAccount.get(accountId) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        inFlight -= 1;
        if (accountId === undefined) return;
        const left = (byAccount.get(accountId) ?? 1) - 1;
        if (left > 0) byAccount.set(accountId, left);
        else byAccount.delete(accountId);
      };
    },
  };
}
