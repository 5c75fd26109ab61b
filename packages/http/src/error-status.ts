import { type ErrorCode, ErrorCodes, type ImagePipelineError } from "@pixport/core";
import type { HttpResponse } from "./types.js";

/** One row of the code → wire table. */
interface ErrorStatus {
  status: number;
  slug: string;
  title: string;
}

const VALIDATION: ErrorStatus = { status: 422, slug: "validation-error", title: "Validation Error" };

/**
 * Every 5xx keeps the contract's `internal-error` / "Internal Error" (section 2.2: a client that
 * knows only the contract reads `type` and `error` the same on any 5xx); what failed is named by
 * the `code` beside them and by the message.
 */
const UNAVAILABLE: ErrorStatus = { status: 503, slug: "internal-error", title: "Internal Error" };

/**
 * The only code → status table of pixport (contract section 2.2). 422 codes use the validation
 * body shape (`errors` list, no `message`); every other code uses the message shape.
 */
export const ERROR_STATUS: Readonly<Record<ErrorCode, ErrorStatus>> = {
  UNAUTHORIZED: { status: 401, slug: "unauthorized", title: "Unauthorized" },
  FORBIDDEN: { status: 403, slug: "forbidden", title: "Forbidden" },
  FEATURE_NOT_AVAILABLE: { status: 403, slug: "forbidden", title: "Forbidden" },
  QUOTA_EXCEEDED: { status: 403, slug: "forbidden", title: "Forbidden" },
  IMAGE_NOT_FOUND: { status: 404, slug: "not-found", title: "Not Found" },
  VALIDATION_FAILED: VALIDATION,
  INVALID_IMAGE: VALIDATION,
  IMAGE_TOO_LARGE: VALIDATION,
  OUTPUT_TOO_LARGE: VALIDATION,
  URL_NOT_ALLOWED: VALIDATION,
  SOURCE_UNREACHABLE: VALIDATION,
  SOURCE_TIMEOUT: VALIDATION,
  SOURCE_NOT_ACCESSIBLE: VALIDATION,
  SOURCE_ERROR: VALIDATION,
  ORIGIN_NOT_FOUND: { status: 404, slug: "not-found", title: "Not Found" },
  ORIGIN_ERROR: { status: 502, slug: "internal-error", title: "Internal Error" },
  ORIGIN_TIMEOUT: { status: 504, slug: "internal-error", title: "Internal Error" },
  BAD_REQUEST: { status: 400, slug: "bad-request", title: "Bad Request" },
  RATE_LIMITED: { status: 429, slug: "too-many-requests", title: "Too Many Requests" },
  UNSUPPORTED_OPERATION: { status: 501, slug: "internal-error", title: "Internal Error" },
  STORAGE_UNAVAILABLE: UNAVAILABLE,
  OVERLOADED: UNAVAILABLE,
  OCR_AT_CAPACITY: UNAVAILABLE,
  STARTING: UNAVAILABLE,
  MODEL_NOT_CONFIGURED: { status: 501, slug: "internal-error", title: "Internal Error" },
  MODEL_UNAVAILABLE: UNAVAILABLE,
  MODEL_BAD_RESPONSE: { status: 502, slug: "internal-error", title: "Internal Error" },
  MODEL_TIMEOUT: { status: 504, slug: "internal-error", title: "Internal Error" },
  PROCESSING_TIMEOUT: VALIDATION,
  ROUTE_NOT_FOUND: { status: 404, slug: "not-found", title: "Not Found" },
  REQUEST_TIMEOUT: { status: 408, slug: "request-timeout", title: "Request Timeout" },
  INVALID_CONFIGURATION: { status: 500, slug: "internal-error", title: "Internal Error" },
  INTERNAL: { status: 500, slug: "internal-error", title: "Internal Error" },
};

/**
 * 5xx codes whose messages are written for clients: model-provider and origin failures (no
 * upstream text, no keys, no hosts or directories), a capability the deployment lacks, and the
 * refusals of a busy or starting node (what is full, when to retry). Every other 5xx answers a
 * generic sentence.
 */
const CLIENT_MESSAGE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCodes.MODEL_NOT_CONFIGURED,
  ErrorCodes.MODEL_UNAVAILABLE,
  ErrorCodes.MODEL_BAD_RESPONSE,
  ErrorCodes.MODEL_TIMEOUT,
  ErrorCodes.ORIGIN_ERROR,
  ErrorCodes.ORIGIN_TIMEOUT,
  ErrorCodes.UNSUPPORTED_OPERATION,
  ErrorCodes.OVERLOADED,
  ErrorCodes.OCR_AT_CAPACITY,
  ErrorCodes.STARTING,
]);

/** The `type` URL of every error body (the original service's docs host, for compatibility). */
export const ERROR_TYPE_BASE = "https://docs.img-processing.com/errors/";

const encoder = new TextEncoder();

/** What clients read on a storage outage (the adapter's own message goes to the logger). */
export const STORAGE_UNAVAILABLE_MESSAGE = "Storage is temporarily unavailable; retry later.";

/** The `type` slug and the `error` title of each status (contract section 2.2), for bodies built by status. */
const STATUS_ROWS: Readonly<Record<number, { slug: string; title: string }>> = {
  400: { slug: "bad-request", title: "Bad Request" },
  401: { slug: "unauthorized", title: "Unauthorized" },
  403: { slug: "forbidden", title: "Forbidden" },
  404: { slug: "not-found", title: "Not Found" },
  405: { slug: "method-not-allowed", title: "Method Not Allowed" },
  408: { slug: "request-timeout", title: "Request Timeout" },
  422: { slug: VALIDATION.slug, title: VALIDATION.title },
  429: { slug: "too-many-requests", title: "Too Many Requests" },
};

/** The contract's message error body (section 2.1): 401, 403, 404, 429, 5xx and 400. */
export interface MessageErrorBody {
  type: string;
  error: string;
  status: number;
  message: string;
  /** The pixport error code, an extra field beside the contract's. */
  code?: ErrorCode;
}

/** The contract's validation error body (section 2.1): 422, `errors` and no `message`. */
export interface ValidationErrorBody {
  type: string;
  error: string;
  status: 422;
  errors: string[];
  code?: ErrorCode;
}

/** What {@link errorBody} needs: the status and the message; the rest follows from the status. */
export interface ErrorBodyOptions {
  status: number;
  message: string;
  code?: ErrorCode | undefined;
  /** The `type` slug. @default the status's (`internal-error` for every 5xx) */
  slug?: string;
  /** The `error` title. @default the status's (`Internal Error` for every 5xx) */
  title?: string;
}

/**
 * The one builder of the contract's message error bodies: `{type, error, status, message}` (and
 * `code` when given), in that order. Every error body pixport writes, in the handler, the
 * bindings and the prebuilt server, comes from here or from {@link validationErrorBody}.
 */
export function errorBody(options: ErrorBodyOptions): MessageErrorBody {
  const row = STATUS_ROWS[options.status] ?? { slug: "internal-error", title: "Internal Error" };
  return {
    type: ERROR_TYPE_BASE + (options.slug ?? row.slug),
    error: options.title ?? row.title,
    status: options.status,
    message: options.message,
    ...(options.code === undefined ? {} : { code: options.code }),
  };
}

/** The contract's 422 body: `{type, error, status: 422, errors}` (and `code` when given). */
export function validationErrorBody(errors: string[], code?: ErrorCode): ValidationErrorBody {
  return {
    type: ERROR_TYPE_BASE + VALIDATION.slug,
    error: VALIDATION.title,
    status: 422,
    errors,
    ...(code === undefined ? {} : { code }),
  };
}

/**
 * The status-only form, for answers outside the contract that nobody reads as an API error (a
 * client that closed its request gets 499): `{status, error}`.
 */
export function statusOnlyBody(status: number, title: string): { status: number; error: string } {
  return { status, error: title };
}

/** An error body as a response with its status. */
export function errorBodyResponse(
  body: MessageErrorBody | ValidationErrorBody | { status: number; error: string },
  headers: Record<string, string> = {},
): HttpResponse {
  return jsonResponse(body.status, body, headers);
}

/** Encodes a JSON response with `Content-Type: application/json`. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResponse {
  return {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", ...headers },
    body: encoder.encode(JSON.stringify(body)),
  };
}

/**
 * The contract's error body for a pixport error. Internal errors never expose their message or
 * cause: the client gets a generic sentence, the logger gets the rest.
 */
export function errorResponse(error: ImagePipelineError): HttpResponse {
  // A capability the codec lacks for a request field (an animation it cannot write, a smart crop
  // it does not offer, a format it cannot read) is the client's to change: 422 naming the field.
  // Without a field it is the deployment's gap: 501.
  const row =
    error.code === ErrorCodes.UNSUPPORTED_OPERATION && error.issues.length > 0
      ? VALIDATION
      : (ERROR_STATUS[error.code] ?? ERROR_STATUS.INTERNAL);
  const headers: Record<string, string> = {};
  // Every 503 says when to retry: storage outages without their own hint get 5 s.
  const retryAfter =
    error.retryAfterSeconds ?? (error.code === ErrorCodes.STORAGE_UNAVAILABLE ? 5 : undefined);
  if (retryAfter !== undefined) headers["Retry-After"] = String(Math.ceil(retryAfter));
  if (row.status === 422) {
    const errors = error.issues.map((issue) => `${issue.path} ${issue.message}`);
    return errorBodyResponse(
      validationErrorBody(errors.length > 0 ? errors : [error.message], error.code),
      headers,
    );
  }
  const { status, slug, title } = row;
  // Storage outages keep their cause (ENOSPC, a path, a Redis host) for the logger; the client
  // learns only that storage is unavailable and when to retry.
  const message =
    error.code === ErrorCodes.STORAGE_UNAVAILABLE
      ? STORAGE_UNAVAILABLE_MESSAGE
      : status >= 500 && !CLIENT_MESSAGE_CODES.has(error.code)
        ? "An internal error occurred while processing the request."
        : error.message;
  return errorBodyResponse(errorBody({ status, slug, title, message, code: error.code }), headers);
}
