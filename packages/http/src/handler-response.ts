import type { Caller, RateLimitDecision } from "@pixport/core";
import { billedUnits } from "@pixport/core/internal";
import { errorBody, errorBodyResponse, jsonResponse } from "./error-status.js";
import type { HandlerSettings, HttpHandlerOptions } from "./handler-options.js";
import type { RouteResult } from "./routes/route.js";
import { type HttpRequest, type HttpResponse, headerValue } from "./types.js";
import type { UploadSlot } from "./upload-admission.js";

/** What one request learned on its way, for its answer's headers and the access log. */
export interface RequestState {
  readonly started: number;
  readonly requestId: string;
  routePath: string;
  /** The authenticated key's owner, once known (also for refused requests). */
  who: Caller | undefined;
  /** The caller of a request that reached its route (the usage header bills only these). */
  caller: Caller | undefined;
  operationId: string | undefined;
  errorCode: string | undefined;
  bodyConsumed: boolean;
  rateLimit: RateLimitDecision | null;
  /** The upload slot of a multipart request, from its admission to its answer. */
  upload: UploadSlot | undefined;
}

/**
 * Adds the headers of every answer (rate limit, usage, `nosniff`, request id, `Connection: close`
 * when the body was left unread) and reports the request to `onRequestDone`.
 */
export function finishResponse(
  request: HttpRequest,
  response: HttpResponse,
  state: RequestState,
  settings: HandlerSettings,
  options: HttpHandlerOptions,
): HttpResponse {
  if (state.rateLimit !== null) Object.assign(response.headers, rateLimitHeaders(state.rateLimit));
  response.headers[settings.usageHeaderName] = String(
    state.caller !== undefined && state.operationId !== undefined && response.status === 201
      ? billedUnits(state.operationId, state.caller.keyKind)
      : 0,
  );
  response.headers["X-Content-Type-Options"] = "nosniff";
  response.headers["X-Request-Id"] = state.requestId;
  if (!state.bodyConsumed && hasBody(request)) response.headers.Connection = "close";
  if (options.onRequestDone !== undefined) {
    try {
      options.onRequestDone({
        requestId: state.requestId,
        method: request.method,
        route: state.routePath,
        operationId: state.operationId,
        status: response.status,
        durationMs: performance.now() - state.started,
        bytes: response.body?.byteLength ?? 0,
        accountId: state.who?.accountId,
        keyId: state.who?.keyId,
        errorCode: state.errorCode,
        cache:
          response.headers["X-Cache"] === "HIT" || response.headers["X-Cache"] === "MISS"
            ? response.headers["X-Cache"]
            : undefined,
      });
    } catch {
      // An access log or a metric must never break an answer.
    }
  }
  return response;
}

export function methodNotAllowed(request: HttpRequest, allow: readonly string[]): HttpResponse {
  return errorBodyResponse(
    errorBody({ status: 405, message: `Method ${request.method} is not allowed on ${request.path}.` }),
    { Allow: allow.join(", ") },
  );
}

/**
 * The rate-limit headers of every authenticated response: the key's limit, what is left in the
 * sliding 60 s window, and the seconds until one more request is admitted (0 while some remain).
 * A 429 also carries `Retry-After` with the same number of seconds.
 */
function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  return {
    "X-RateLimit-Limit": String(decision.limit),
    "X-RateLimit-Remaining": String(decision.remaining),
    "X-RateLimit-Reset": String(Math.ceil(decision.resetMs / 1000)),
  };
}

function hasBody(request: HttpRequest): boolean {
  const length = headerValue(request, "content-length");
  return (length !== undefined && length !== "0") || headerValue(request, "transfer-encoding") !== undefined;
}

export function toResponse(result: RouteResult): HttpResponse {
  switch (result.kind) {
    case "json":
      return jsonResponse(result.status, result.body);
    case "empty":
      return { status: result.status, headers: { ...result.headers }, body: null };
    case "binary":
      return {
        status: result.status,
        headers: {
          "Content-Type": result.contentType,
          "Content-Length": String(result.data.byteLength),
          "Cache-Control": "private, no-store",
          ...(result.etag === undefined ? {} : { ETag: result.etag }),
          ...result.headers,
        },
        body: result.data,
      };
  }
}
