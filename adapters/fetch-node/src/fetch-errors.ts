import { type ErrorCode, ErrorCodes, ImagePipelineError, isImagePipelineError } from "@pixport/core";
import type { ConnectErrors } from "./connect.js";

export const fail = (code: ErrorCode, message: string, cause?: unknown) =>
  new ImagePipelineError(code, message, cause === undefined ? {} : { cause });

export const seconds = (ms: number) => `${ms % 1000 === 0 ? ms / 1000 : (ms / 1000).toFixed(1)}s`;

/** The refusal of a URL the fetcher may not request. */
export const notHttps = () =>
  fail(ErrorCodes.URL_NOT_ALLOWED, "must be an https URL on the default port without credentials");

/** A fetch's connection errors, in the `SOURCE_*` family. */
export function sourceConnectErrors(connectTimeoutMs: number): ConnectErrors {
  return {
    scheme: notHttps,
    blocked: (address, hostname, reason) =>
      fail(
        ErrorCodes.SOURCE_UNREACHABLE,
        "could not be reached (its host resolves to a non-public address)",
        new Error(`${hostname} -> ${address}: ${reason}`),
      ),
    noAddress: () =>
      fail(ErrorCodes.SOURCE_UNREACHABLE, "could not be reached (its host name does not resolve)"),
    timeout: () => fail(ErrorCodes.SOURCE_TIMEOUT, `did not connect within ${seconds(connectTimeoutMs)}`),
  };
}

/** Turns a Node error into the port's error with a client-safe message (details stay in `cause`). */
export function translate(error: unknown): ImagePipelineError {
  if (isImagePipelineError(error)) return error;
  const code = String((error as { code?: unknown })?.code ?? "");
  if (/^(ENOTFOUND|EAI_AGAIN|EAI_NODATA|EAI_NONAME|ENODATA|ESERVFAIL|ENOTIMP)$/.test(code)) {
    return fail(
      ErrorCodes.SOURCE_UNREACHABLE,
      "could not be reached (its host name does not resolve)",
      error,
    );
  }
  if (/^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL|ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code)) {
    return fail(ErrorCodes.SOURCE_UNREACHABLE, "could not be reached (the connection failed)", error);
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|EPROTO/.test(code)) {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched securely (the TLS connection or certificate was not valid for the host)",
      error,
    );
  }
  if (code.startsWith("HPE_")) {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched (the source sent an invalid or oversized response)",
      error,
    );
  }
  if (code.startsWith("Z_") || code === "ERR_ZLIB_INITIALIZATION_FAILED") {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched (the source sent an invalid compressed body)",
      error,
    );
  }
  return fail(ErrorCodes.SOURCE_ERROR, "could not be fetched (the source failed)", error);
}

/** The deadline of one fetch: a signal plus the error that explains it. */
export function startDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  const error = fail(ErrorCodes.SOURCE_TIMEOUT, `did not answer within ${seconds(timeoutMs)}`);
  const timer = setTimeout(() => controller.abort(error), timeoutMs);
  return { signal: controller.signal, error, clear: () => clearTimeout(timer) };
}

export interface Deadline {
  signal: AbortSignal;
  error: ImagePipelineError;
  clear: () => void;
}
