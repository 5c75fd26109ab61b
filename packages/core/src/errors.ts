/**
 * The one error catalog of pixport. Every failure the core reports carries one of these codes; the
 * HTTP layer maps codes to statuses in exactly one table (`@pixport/http` error-status), and the
 * core knows nothing about HTTP.
 */
export const ErrorCodes = {
  /** No API key, or a key that is unknown or revoked. */
  UNAUTHORIZED: "UNAUTHORIZED",
  /** The key is valid but may not touch this resource (another account's image). */
  FORBIDDEN: "FORBIDDEN",
  /** The feature is not available to this key kind (e.g. a live-only operation with a test key). */
  FEATURE_NOT_AVAILABLE: "FEATURE_NOT_AVAILABLE",
  /** The monthly quota of the account is used up. */
  QUOTA_EXCEEDED: "QUOTA_EXCEEDED",
  /** No image with that id for this caller (unknown, deleted, or in the other stage). */
  IMAGE_NOT_FOUND: "IMAGE_NOT_FOUND",
  /** The request failed validation; `issues` lists every failing field. */
  VALIDATION_FAILED: "VALIDATION_FAILED",
  /** The bytes are not a readable jpeg, png or webp image. */
  INVALID_IMAGE: "INVALID_IMAGE",
  /** The input exceeds the byte, pixel or side limits. */
  IMAGE_TOO_LARGE: "IMAGE_TOO_LARGE",
  /** The requested output would exceed the output side, pixel or byte limit of its format. */
  OUTPUT_TOO_LARGE: "OUTPUT_TOO_LARGE",
  /** A URL to import is refused by the origin policy (scheme, port, credentials, host, redirect). */
  URL_NOT_ALLOWED: "URL_NOT_ALLOWED",
  /** A URL to import could not be reached (DNS, connection, a non-public address). */
  SOURCE_UNREACHABLE: "SOURCE_UNREACHABLE",
  /** A URL to import did not answer within the connect or total deadline. */
  SOURCE_TIMEOUT: "SOURCE_TIMEOUT",
  /** The source of a URL import answered 4xx (private, missing, expired pre-signed URL). */
  SOURCE_NOT_ACCESSIBLE: "SOURCE_NOT_ACCESSIBLE",
  /** The source of a URL import failed (5xx, too many redirects, TLS or protocol error). */
  SOURCE_ERROR: "SOURCE_ERROR",
  /** An origin of origin-image delivery has no image at the path, or no origin has that name. */
  ORIGIN_NOT_FOUND: "ORIGIN_NOT_FOUND",
  /**
   * An origin of origin-image delivery failed: an error answer, a refused connection or redirect,
   * or something else than an image.
   */
  ORIGIN_ERROR: "ORIGIN_ERROR",
  /** An origin of origin-image delivery gave no complete answer within its deadline. */
  ORIGIN_TIMEOUT: "ORIGIN_TIMEOUT",
  /** The request could not be parsed (malformed JSON, empty JSON body, wrong content type). */
  BAD_REQUEST: "BAD_REQUEST",
  /** The rate limit of the key is exhausted. */
  RATE_LIMITED: "RATE_LIMITED",
  /** The configured adapter cannot perform the requested step or format. */
  UNSUPPORTED_OPERATION: "UNSUPPORTED_OPERATION",
  /** A storage backend is unavailable (outage, throttling); the request may be retried. */
  STORAGE_UNAVAILABLE: "STORAGE_UNAVAILABLE",
  /**
   * This node runs and queues as many image jobs as it accepts (the pipeline's `workQueue`); the
   * request did no work and was not billed. Retry after `retryAfterSeconds`.
   */
  OVERLOADED: "OVERLOADED",
  /**
   * The embedded text recognition (OCR) already reads and queues as many pages as it accepts; the
   * call did no work. Retry after `retryAfterSeconds`.
   */
  OCR_AT_CAPACITY: "OCR_AT_CAPACITY",
  /** The server is still starting (its handler is not built yet); retry in a moment. */
  STARTING: "STARTING",
  /**
   * A model-backed operation (imagine, visualize, classify, extract-formatted-text) has no model
   * provider configured on this deployment; the message names the operation and the model.
   */
  MODEL_NOT_CONFIGURED: "MODEL_NOT_CONFIGURED",
  /** The model provider is unavailable (rate limited, out of quota, refused our key); retry later. */
  MODEL_UNAVAILABLE: "MODEL_UNAVAILABLE",
  /** The model provider failed (5xx, connection error) or gave a malformed or unusable answer. */
  MODEL_BAD_RESPONSE: "MODEL_BAD_RESPONSE",
  /** The model provider did not answer within the per-call timeout (the call was aborted). */
  MODEL_TIMEOUT: "MODEL_TIMEOUT",
  /** A factory received invalid options. */
  /**
   * A codec job ran past `limits.maxJobMs` and was stopped (422 naming the field; the same
   * request would take as long again).
   */
  PROCESSING_TIMEOUT: "PROCESSING_TIMEOUT",
  /** No route matches the method and path (404 with the contract's not-found body). */
  ROUTE_NOT_FOUND: "ROUTE_NOT_FOUND",
  /** The request body arrived too slowly (an upload below the minimum rate). */
  REQUEST_TIMEOUT: "REQUEST_TIMEOUT",
  INVALID_CONFIGURATION: "INVALID_CONFIGURATION",
  /** Anything unexpected. The cause goes to the logger, never to the client. */
  INTERNAL: "INTERNAL",
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** One failing field: `path` is a dotted field path (`watermarks.0.id`), `message` starts with a verb. */
export interface ValidationIssue {
  path: string;
  message: string;
}

const MARKER = Symbol.for("pixport.error");

export interface ImagePipelineErrorOptions {
  /** Failing fields, for the 422-family codes. */
  issues?: readonly ValidationIssue[];
  /** Seconds after which a retry may succeed (rate limits, outages). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/**
 * The base error of pixport. Recognise it with {@link isImagePipelineError}, which works across
 * duplicated copies of this package (it checks a `Symbol.for` marker, not `instanceof`).
 */
export class ImagePipelineError extends Error {
  readonly [MARKER] = true;
  readonly code: ErrorCode;
  readonly issues: readonly ValidationIssue[];
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: ImagePipelineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ImagePipelineError";
    this.code = code;
    this.issues = options.issues ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** True for any pixport error, even one thrown by another copy of `@pixport/core`. */
export function isImagePipelineError(value: unknown): value is ImagePipelineError {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
}

/** A 422-family error listing every failing field. */
export function validationError(
  issues: readonly ValidationIssue[],
  code: ErrorCode = ErrorCodes.VALIDATION_FAILED,
): ImagePipelineError {
  const summary = issues.map((issue) => `${issue.path} ${issue.message}`).join("; ");
  return new ImagePipelineError(code, summary || "validation failed", { issues });
}

/** The contract's 404 message: `Image with id <id> not found.` */
export function imageNotFound(id: string): ImagePipelineError {
  return new ImagePipelineError(ErrorCodes.IMAGE_NOT_FOUND, `Image with id ${id} not found.`);
}
