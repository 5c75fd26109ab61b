import type { S3Client } from "@aws-sdk/client-s3";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";
import { z } from "zod";

/** Retry settings shared by the S3 adapters. */
export const s3RetryOptionsShape = {
  /**
   * Attempts per call for throttling, 5xx and connection errors (this adapter's own bounded loop,
   * on top of whatever the S3Client's retry strategy already does). @default 3
   */
  maxAttempts: z.number().int().min(1).max(10).default(3),
  /** Delay before the first retry, doubled on each later one, ms. @default 100 */
  retryDelayMs: z.number().int().nonnegative().max(60_000).default(100),
};

/** Retry settings shared by the S3 adapters. */
export type S3RetryOptions = z.input<z.ZodObject<typeof s3RetryOptionsShape>>;

/** An object-key prefix: empty, or key characters ending with `/`. */
export const s3PrefixSchema = z
  .string()
  .regex(/^([A-Za-z0-9._\-/]*\/)?$/, 'must be empty or end with "/" (e.g. "pixport/")')
  .default("");

/** A constructed S3Client (anything with the SDK's `send`). */
export const s3ClientSchema = z.custom<S3Client>(
  (value) => typeof (value as { send?: unknown } | null)?.send === "function",
  { message: "must be a constructed S3Client (new S3Client({...}))" },
);

const THROTTLING = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "TooManyRequestsException",
  "RequestLimitExceeded",
  "ProvisionedThroughputExceededException",
  "RequestThrottled",
  "RequestThrottledException",
]);

const MISSING = new Set(["NoSuchKey", "NotFound"]);

interface SdkErrorShape {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
  $retryable?: unknown;
}

function shape(error: unknown): SdkErrorShape {
  return typeof error === "object" && error !== null ? (error as SdkErrorShape) : {};
}

/** Whether an SDK error means "no such object" (`NoSuchKey`, or a 404 from HEAD). */
export function isMissingObject(error: unknown): boolean {
  const { name, Code, $metadata } = shape(error);
  return MISSING.has(name ?? "") || MISSING.has(Code ?? "") || $metadata?.httpStatusCode === 404;
}

/** Throttling, 5xx, or a failure before any answer (connection refused, reset, timeout). */
export function isRetryable(error: unknown): boolean {
  const { name, Code, $metadata, $retryable } = shape(error);
  if (THROTTLING.has(name ?? "") || THROTTLING.has(Code ?? "") || $retryable !== undefined) return true;
  const status = $metadata?.httpStatusCode;
  if (status === undefined) return !(error instanceof TypeError);
  return status === 429 || status === 503 || status >= 500;
}

/**
 * Runs one S3 call with bounded retries for retryable failures; anything else, and the last
 * retryable failure, becomes `STORAGE_UNAVAILABLE` with `cause` kept and `retryAfterSeconds`.
 * A missing object is the caller's business: `onMissing` turns it into a value (`null`).
 */
export function createS3Caller(options: { maxAttempts: number; retryDelayMs: number }) {
  const { maxAttempts, retryDelayMs } = options;
  return async function call<T>(action: string, task: () => Promise<T>, onMissing?: () => T): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await task();
      } catch (error) {
        if (onMissing !== undefined && isMissingObject(error)) return onMissing();
        if (isImagePipelineError(error) || error instanceof TypeError) throw error;
        const retryable = isRetryable(error);
        if (retryable && attempt < maxAttempts) {
          await new Promise((resolve) => setTimeout(resolve, retryDelayMs * 2 ** (attempt - 1)));
          continue;
        }
        const { name, $metadata } = shape(error);
        throw new ImagePipelineError(
          ErrorCodes.STORAGE_UNAVAILABLE,
          `S3 ${action} failed${retryable ? ` after ${attempt} attempt(s)` : ""}: ${name ?? "error"}${
            $metadata?.httpStatusCode === undefined ? "" : ` (HTTP ${$metadata.httpStatusCode})`
          }.`,
          { cause: error, retryAfterSeconds: retryable ? 1 : 30 },
        );
      }
    }
  };
}
