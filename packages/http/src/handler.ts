import {
  type Caller,
  ErrorCodes,
  type ImagePipeline,
  ImagePipelineError,
  type Logger,
  type RateLimitDecision,
  RateLimitedError,
  silentLogger,
} from "@pixport/core";
import { formatBytes, parseOptions } from "@pixport/core/adapter-kit";
import { billedUnits } from "@pixport/core/internal";
import { z } from "zod";
import { discardBody, readJsonBody } from "./body.js";
import { errorAnswer } from "./error-funnel.js";
import { errorBody, errorBodyResponse, jsonResponse } from "./error-status.js";
import { parseMultipartUpload } from "./multipart.js";
import { compile, matchRoute } from "./route-match.js";
import { defaultRoutes } from "./routes/default-routes.js";
import type { Route, RouteContext, RouteResult } from "./routes/route.js";
import { type HttpRequest, type HttpResponse, headerValue } from "./types.js";
import { createUploadAdmission, type UploadAdmission, type UploadSlot } from "./upload-admission.js";

/** What a client may send as `X-Request-Id` (anything else is replaced by a new id). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Options of {@link createHttpHandler}, validated once. */
export const httpHandlerOptionsSchema = z.object({
  /**
   * Absolute base URL of the API as clients reach it (e.g. `https://api.example.com`), used for
   * list links. When absent, the binding's request-derived mount URL is used.
   */
  publicBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Name of the usage header. @default "X-Image-Processing-Usage" */
  usageHeaderName: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/)
    .default("X-Image-Processing-Usage"),
  /** Largest JSON body, bytes. @default 1 MiB */
  maxJsonBytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /**
   * Uploads (multipart requests) in progress at once, from reading the body to the answer. Beyond,
   * a request is refused unread with 503 `OVERLOADED`: the memory of upload bodies stays below
   * `maxConcurrentUploads x maxUploadBytes` whatever arrives. @default 32
   */
  maxConcurrentUploads: z.number().int().min(1).max(100_000).default(32),
  /**
   * Uploads in progress at once for one account (all its keys): one tenant cannot take every
   * upload slot. Beyond, its next upload is refused unread with 503 `OVERLOADED`. @default 8
   */
  maxConcurrentUploadsPerAccount: z.number().int().min(1).max(100_000).default(8),
  /**
   * Slowest accepted upload body, bytes per second on average since it began, checked after
   * `uploadGraceMs`: a slower body is cut off with 408 `REQUEST_TIMEOUT`, so a client trickling
   * bytes cannot hold a slot for long. `0` turns the check off. @default 16384 (16 KiB/s)
   */
  minUploadBytesPerSecond: z
    .number()
    .int()
    .nonnegative()
    .default(16 * 1024),
  /** Time an upload body may take before its rate is first checked, ms. @default 10000 */
  uploadGraceMs: z.number().int().min(100).max(600_000).default(10_000),
  /**
   * When every upload slot is taken, a new upload waits briefly instead of being refused, and a
   * body of another account that has held its slot `t >= fairUploadAfterMs` with fewer than
   * `fairUploadBytesPerSecond x t/1000 x t/fairUploadAfterMs` bytes loses it to the waiting upload
   * (408 `REQUEST_TIMEOUT`): slow bodies cannot keep a well-behaved upload out, however many
   * accounts send them. `0` turns it off (a full node refuses at once). @default 65536 (64 KiB/s)
   */
  fairUploadBytesPerSecond: z
    .number()
    .int()
    .nonnegative()
    .default(64 * 1024),
  /** Time a body holds its slot before a waiting upload may take it, ms. @default 2000 */
  fairUploadAfterMs: z.number().int().min(100).max(600_000).default(2_000),
  /** Multipart overhead allowed above the upload limit before a request is refused unread. @default 64 KiB */
  multipartOverheadBytes: z
    .number()
    .int()
    .nonnegative()
    .default(64 * 1024),
});

/**
 * One answered request, for access logs and metrics. Never carries the API key: only the key's
 * record id and its account.
 */
export interface RequestEvent {
  /** The client's `X-Request-Id` when it is sane (1 to 128 of `A-Za-z0-9._:-`), else a new UUID. */
  requestId: string;
  method: string;
  /** The route's path template (`/v1/images/{image_id}/resize`), or `unmatched`. */
  route: string;
  operationId: string | undefined;
  status: number;
  durationMs: number;
  /** Bytes of the response body. */
  bytes: number;
  accountId: string | undefined;
  keyId: string | undefined;
  /** The error code of a failed request. */
  errorCode: string | undefined;
  /** A delivered variant came from the cache (`HIT`) or was computed (`MISS`); else undefined. */
  cache?: "HIT" | "MISS" | undefined;
}

export type HttpHandlerOptions = z.input<typeof httpHandlerOptionsSchema> & {
  /** The routes to serve. @default defaultRoutes (every image route and `GET /v1/openapi.json`) */
  routes?: readonly Route[];
  /**
   * Called once per answered request (after the answer is built, before it is sent), for access
   * logs and metrics. Errors it throws are ignored.
   */
  onRequestDone?: (event: RequestEvent) => void;
  /** Receives unexpected errors (with their cause). @default silent */
  logger?: Logger;
};

/** A framework-neutral request handler. */
export type HttpHandler = (request: HttpRequest) => Promise<HttpResponse>;

/** What one request learned on its way, for its answer's headers and the access log. */
interface RequestState {
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

type HandlerSettings = z.output<typeof httpHandlerOptionsSchema>;

/**
 * Builds the one handler every binding uses: routing, authentication (`x-api-key`), body parsing,
 * invocation of the core, the contract's error bodies and the usage header on every response.
 * It never throws: unexpected errors become a generic 500 and go to the logger.
 *
 * @example
 * ```ts
 * const handler = createHttpHandler(pipeline, { routes: defaultRoutes });
 * const response = await handler({
 *   method: "GET",
 *   path: "/v1/images",
 *   query: new URLSearchParams("take=5"),
 *   headers: { "x-api-key": key },
 *   body: null,
 *   baseUrl: "https://api.example.com",
 * });
 * ```
 */
export function createHttpHandler(pipeline: ImagePipeline, options: HttpHandlerOptions = {}): HttpHandler {
  const settings = parseOptions(httpHandlerOptionsSchema, options, "HTTP handler");
  const logger = options.logger ?? silentLogger;
  const routes = options.routes ?? defaultRoutes;
  const compiled = routes.map(compile);
  const publicBaseUrl = settings.publicBaseUrl?.replace(/\/+$/, "");
  const uploads = createUploadAdmission(settings);

  return async function handle(request: HttpRequest): Promise<HttpResponse> {
    const sent = headerValue(request, "x-request-id");
    const state: RequestState = {
      started: performance.now(),
      requestId: sent !== undefined && SANE_REQUEST_ID.test(sent) ? sent : globalThis.crypto.randomUUID(),
      routePath: "unmatched",
      who: undefined,
      caller: undefined,
      operationId: undefined,
      errorCode: undefined,
      bodyConsumed: request.body === null || request.body instanceof Uint8Array,
      rateLimit: null,
      upload: undefined,
    };
    const finish = (response: HttpResponse) => finishResponse(request, response, state, settings, options);
    let releaseWork: (() => void) | undefined;
    try {
      const match = matchRoute(compiled, request);
      if (match.kind === "not-found") {
        throw new ImagePipelineError(
          ErrorCodes.ROUTE_NOT_FOUND,
          `Route ${request.method} ${request.path} not found.`,
        );
      }
      if (match.kind === "method-not-allowed") return finish(methodNotAllowed(request, match.allow));
      const { route, params } = match;
      state.operationId = route.operationId;
      state.routePath = route.path;
      // A full node refuses an image job first, from the route alone: no key look-up and no body,
      // nothing that waits on the disk or the thread pool, so the 503 stays fast under load. The
      // place is held during the look-ups, so requests arriving together cannot all pass, and
      // released before the body is read, so a slow body never holds one.
      releaseWork = pipeline.holdWork(route.operationId);
      const authenticated = await admitRequest(pipeline, request, route, uploads, state, releaseWork);
      releaseWork();
      const context: RouteContext = {
        pipeline,
        get caller(): Caller {
          if (authenticated === undefined) {
            throw new ImagePipelineError(
              ErrorCodes.INTERNAL,
              `Route ${route.operationId} has auth: false and therefore no caller.`,
            );
          }
          return authenticated;
        },
        request,
        params,
        body: undefined,
        multipart: undefined,
        baseUrl: publicBaseUrl ?? request.baseUrl.replace(/\/+$/, ""),
        routes,
        usageHeaderName: settings.usageHeaderName,
      };
      await readRequestBody(route, context, pipeline, settings, state.upload);
      state.bodyConsumed = true;
      state.caller = authenticated;
      const response = toResponse(await route.invoke(context));
      if (request.method.toUpperCase() === "HEAD") response.body = null;
      return finish(response);
    } catch (error) {
      const answer = errorAnswer(error, request, state.requestId, logger);
      state.errorCode = answer.errorCode;
      return finish(answer.response);
    } finally {
      releaseWork?.();
      state.upload?.release();
    }
  };
}

/**
 * Authenticates the request (routes with `auth: false`, the OpenAPI document, never look at the
 * key), gives an upload its slot (or refuses it when the node has no room), then counts the
 * request against the key's per-minute limit. Returns the caller, `undefined` on routes without authentication.
 */
async function admitRequest(
  pipeline: ImagePipeline,
  request: HttpRequest,
  route: Route,
  uploads: UploadAdmission,
  state: RequestState,
  releaseWork: () => void,
): Promise<Caller | undefined> {
  const authenticated = route.auth
    ? await pipeline.authenticate(headerValue(request, "x-api-key"))
    : undefined;
  state.who = authenticated;
  // A node that refuses the work refuses before the rate limit counts the request: a 503 does
  // not use up the key's budget (uploads in progress here, image jobs in the core's gate).
  // An upload that waits for a slot gives its work place back first: waiting uploads must not
  // fill the work queue that other tenants' image jobs need.
  if (route.body === "multipart") {
    state.upload = await uploads.admit(authenticated?.accountId, request.signal, releaseWork);
  }
  // Every authenticated request counts against the key's per-minute limit (contract 3, P12).
  if (authenticated !== undefined) {
    try {
      // The work gate was asked before the look-up (`holdWork`), so only the limit is counted here.
      state.rateLimit = await pipeline.admit(authenticated);
    } catch (error) {
      // A refused request still reports the window (the decision travels on the error).
      if (RateLimitedError.isInstance(error)) state.rateLimit = error.decision;
      throw error;
    }
  }
  return authenticated;
}

/** Reads the body the route declares into the context (JSON, a multipart upload) or drains it. */
async function readRequestBody(
  route: Route,
  context: RouteContext,
  pipeline: ImagePipeline,
  settings: HandlerSettings,
  upload: UploadSlot | undefined,
): Promise<void> {
  const { request } = context;
  if (route.body === "json") {
    context.body = await readJsonBody(request, settings.maxJsonBytes);
  } else if (route.body === "multipart") {
    const maxFileBytes = pipeline.limits.maxUploadBytes;
    const declared = Number(headerValue(request, "content-length") ?? Number.NaN);
    if (declared > maxFileBytes + settings.multipartOverheadBytes) {
      throw new ImagePipelineError(ErrorCodes.IMAGE_TOO_LARGE, "upload too large", {
        issues: [{ path: "image", message: `must not be larger than ${formatBytes(maxFileBytes)}` }],
      });
    }
    context.multipart = await parseMultipartUpload(request, {
      maxFileBytes,
      minBytesPerSecond: settings.minUploadBytesPerSecond,
      graceMs: settings.uploadGraceMs,
      ...(upload === undefined ? {} : { abort: upload.signal, onBytes: upload.received }),
    });
    upload?.bodyRead();
  } else {
    await discardBody(request.body);
  }
}

/**
 * Adds the headers of every answer (rate limit, usage, `nosniff`, request id, `Connection: close`
 * when the body was left unread) and reports the request to `onRequestDone`.
 */
function finishResponse(
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

function methodNotAllowed(request: HttpRequest, allow: readonly string[]): HttpResponse {
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

function toResponse(result: RouteResult): HttpResponse {
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
