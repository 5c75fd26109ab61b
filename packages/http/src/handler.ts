import { type Caller, ErrorCodes, type ImagePipeline, ImagePipelineError, silentLogger } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import { errorAnswer } from "./error-funnel.js";
import { type HttpHandler, type HttpHandlerOptions, httpHandlerOptionsSchema } from "./handler-options.js";
import { finishResponse, methodNotAllowed, type RequestState, toResponse } from "./handler-response.js";
import { admitRequest, readRequestBody } from "./request-intake.js";
import { compile, matchRoute } from "./route-match.js";
import { defaultRoutes } from "./routes/default-routes.js";
import type { RouteContext } from "./routes/route.js";
import { type HttpRequest, type HttpResponse, headerValue } from "./types.js";
import { createUploadAdmission } from "./upload-admission.js";

export {
  type HttpHandler,
  type HttpHandlerOptions,
  httpHandlerOptionsSchema,
  type RequestEvent,
} from "./handler-options.js";

/** What a client may send as `X-Request-Id` (anything else is replaced by a new id). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

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
