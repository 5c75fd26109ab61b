/** Rate-limit state of the key, from the `X-RateLimit-*` headers (absent on unauthenticated routes). */
export interface RateLimit {
  /** Requests per minute of the key. */
  limit?: number;
  /** Requests left in the current 60 s window. */
  remaining?: number;
  /** Seconds until one more request is admitted. */
  reset?: number;
}

/** What the client saw of one response; given to {@link PixportClientOptions.onResponse}. */
export interface ResponseInfo {
  method: string;
  /** The request's URL. */
  url: string;
  status: number;
  /** Images billed by the request (`X-Image-Processing-Usage`), when the server said. */
  usage?: number;
  rateLimit: RateLimit;
  /** `Retry-After` seconds (429 and 503), when present. */
  retryAfter?: number;
}

/**
 * Every non-2xx answer of the API, with the contract's error body: `message` for most errors,
 * `errors` (one `<field> <message>` per failing field) for 422 validation errors.
 */
export class PixportApiError extends Error {
  override readonly name = "PixportApiError";
  /** HTTP status. */
  readonly status: number;
  /** Error kind, a URL (the body's `type`). */
  readonly type: string | undefined;
  /** Title of the error kind, e.g. `Not Found` (the body's `error`). */
  readonly title: string | undefined;
  /** pixport's machine-readable code, e.g. `IMAGE_NOT_FOUND`. */
  readonly code: string | undefined;
  /** Every failing field of a 422, e.g. `width must be an integer between 1 and 10000`. */
  readonly errors: readonly string[] | undefined;
  readonly rateLimit: RateLimit;
  /** Seconds to wait before retrying (429, 503). */
  readonly retryAfter: number | undefined;
  readonly usage: number | undefined;
  /** The parsed body as the server sent it (text when it was not JSON). */
  readonly body: unknown;

  constructor(info: ResponseInfo, body: unknown) {
    const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const errors = Array.isArray(fields.errors)
      ? fields.errors.filter((each): each is string => typeof each === "string")
      : undefined;
    const message =
      typeof fields.message === "string"
        ? fields.message
        : errors !== undefined
          ? errors.join("; ")
          : typeof body === "string" && body !== ""
            ? body.slice(0, 200)
            : `HTTP ${info.status}`;
    super(message);
    this.status = info.status;
    this.type = typeof fields.type === "string" ? fields.type : undefined;
    this.title = typeof fields.error === "string" ? fields.error : undefined;
    this.code = typeof fields.code === "string" ? fields.code : undefined;
    this.errors = errors;
    this.rateLimit = info.rateLimit;
    this.retryAfter = info.retryAfter;
    this.usage = info.usage;
    this.body = body;
  }
}

const integer = (value: string | null): number | undefined => {
  if (value === null || !/^[0-9]+$/.test(value)) return undefined;
  return Number(value);
};

export function describeResponse(method: string, response: Response): ResponseInfo {
  const headers = response.headers;
  const rateLimit: RateLimit = {};
  const limit = integer(headers.get("x-ratelimit-limit"));
  const remaining = integer(headers.get("x-ratelimit-remaining"));
  const reset = integer(headers.get("x-ratelimit-reset"));
  if (limit !== undefined) rateLimit.limit = limit;
  if (remaining !== undefined) rateLimit.remaining = remaining;
  if (reset !== undefined) rateLimit.reset = reset;
  const info: ResponseInfo = { method, url: response.url, status: response.status, rateLimit };
  const usage = integer(headers.get("x-image-processing-usage"));
  if (usage !== undefined) info.usage = usage;
  const retryAfter = integer(headers.get("retry-after"));
  if (retryAfter !== undefined) info.retryAfter = retryAfter;
  return info;
}
