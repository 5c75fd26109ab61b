import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import { clientGoneSignal, type HttpHandler, type HttpRequest, type HttpResponse } from "@pixport/http";
import { type NextFunction, type Request, type Response, Router } from "express";
import { z } from "zod";

/** Options of {@link createExpressRouter} (unknown keys are refused). */
export const expressRouterOptionsSchema = z
  .object({
    /**
     * Trust `X-Forwarded-Proto`/`X-Forwarded-Host` when deriving link URLs. Only enable behind a
     * proxy you control (Express's own `trust proxy` setting is honoured as well).
     * @default false
     */
    trustForwardedHeaders: z.boolean().default(false),
  })
  .strict();

/** Options of {@link createExpressRouter}; see {@link expressRouterOptionsSchema}. */
export type ExpressRouterOptions = z.input<typeof expressRouterOptionsSchema>;

/**
 * Mounts the pixport route table on an Express router. The router works at any prefix inside an
 * existing app (`app.use("/images-api", createExpressRouter(handler))`), next to the app's own
 * routes, with or without body parsers installed before it.
 *
 * @example
 * ```ts
 * const app = express();
 * app.use("/pixport", createExpressRouter(createHttpHandler(pipeline)));
 * ```
 */
export function createExpressRouter(handler: HttpHandler, input: ExpressRouterOptions = {}): Router {
  if (typeof handler !== "function") {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      "createExpressRouter needs a handler from createHttpHandler(pipeline) as its first argument.",
    );
  }
  const options = parseOptions(expressRouterOptionsSchema, input, "createExpressRouter");
  const router = Router();
  router.use((request: Request, response: Response, next: NextFunction) => {
    handler({ ...toHttpRequest(request, options), signal: clientGoneSignal(response) })
      .then((result) => send(response, result))
      .catch(next);
  });
  return router;
}

function toHttpRequest(request: Request, options: { trustForwardedHeaders: boolean }): HttpRequest {
  const url = request.originalUrl ?? request.url;
  const queryIndex = url.indexOf("?");
  const query = new URLSearchParams(queryIndex === -1 ? "" : url.slice(queryIndex + 1));
  const forwarded = options.trustForwardedHeaders === true;
  const protocol = (forwarded && firstHeader(request, "x-forwarded-proto")) || request.protocol;
  const host = (forwarded && firstHeader(request, "x-forwarded-host")) || request.get("host") || "localhost";
  return {
    method: request.method,
    path: request.path,
    query,
    headers: request.headers,
    body: bodyOf(request),
    baseUrl: `${protocol}://${host}${request.baseUrl}`,
  };
}

function firstHeader(request: Request, name: string): string | undefined {
  return request.get(name)?.split(",")[0]?.trim() || undefined;
}

/** The raw body; when a body parser of the host app already consumed it, its result is re-encoded. */
function bodyOf(request: Request): HttpRequest["body"] {
  if (!request.readableEnded && !request.complete) return request;
  const parsed: unknown = request.body;
  if (parsed === undefined) return request.readableEnded ? new Uint8Array(0) : request;
  if (parsed instanceof Uint8Array) return parsed;
  if (typeof parsed === "string") return new TextEncoder().encode(parsed);
  if (
    typeof parsed === "object" &&
    parsed !== null &&
    Object.keys(parsed).length === 0 &&
    request.readableEnded
  ) {
    // body-parser sets `{}` when it skipped the request (other content type): nothing to re-encode.
    return new Uint8Array(0);
  }
  return new TextEncoder().encode(JSON.stringify(parsed));
}

function send(response: Response, result: HttpResponse): void {
  response.status(result.status);
  for (const [name, value] of Object.entries(result.headers)) response.setHeader(name, value);
  if (result.body === null) response.end();
  else response.end(Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength));
}
