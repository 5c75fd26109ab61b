import type { Readable } from "node:stream";
import type { ImagePipeline, Logger } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import {
  clientGoneSignal,
  createHttpHandler,
  defaultRoutes,
  type HttpHandler,
  type HttpHandlerOptions,
  type HttpRequest,
  type HttpResponse,
  type Route,
} from "@pixport/http";
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";

const isObject = (value: unknown) => typeof value === "object" && value !== null;

/**
 * Options of {@link fastifyPixport} (besides Fastify's own register options such as `prefix`,
 * which pass through). Give `pipeline` or `handler`.
 */
export const fastifyPixportOptionsSchema = z
  .looseObject({
    /**
     * The pipeline to serve. The plugin builds the handler with `handlerOptions`; unexpected errors go
     * to this Fastify instance's logger unless `handlerOptions.logger` is set.
     */
    pipeline: z
      .custom<ImagePipeline>(
        (value) => isObject(value) && typeof (value as ImagePipeline).authenticate === "function",
        {
          message: "must be a pipeline from createImagePipeline",
        },
      )
      .optional(),
    /** Options of `createHttpHandler` when `pipeline` is given. */
    handlerOptions: z.custom<HttpHandlerOptions>(isObject, { message: "must be an object" }).optional(),
    /** A ready handler from `createHttpHandler` (with its own logger), instead of `pipeline`. */
    handler: z
      .custom<HttpHandler>((value) => typeof value === "function", {
        message: "must be a handler from createHttpHandler",
      })
      .optional(),
    /**
     * The table the handler serves, registered as native Fastify routes (so they show in
     * `printRoutes()` and hooks see `routeOptions.url`). Requests matching none of them still reach
     * the handler, which answers the contract's JSON 404 and 405.
     * @default handlerOptions.routes, else defaultRoutes
     */
    routes: z
      .array(z.custom<Route>(isObject, { message: "must be a route" }))
      .readonly()
      .optional(),
  })
  .refine((options) => (options.pipeline === undefined) !== (options.handler === undefined), {
    message: "give exactly one of pipeline or handler (a handler from createHttpHandler)",
    path: ["pipeline"],
  });

/** Options of {@link fastifyPixport}; see {@link fastifyPixportOptionsSchema}. */
export type FastifyPixportOptions = z.input<typeof fastifyPixportOptionsSchema>;

/**
 * The pixport route table as an encapsulated Fastify plugin (deliberately not wrapped in
 * `fastify-plugin`): its routes, its content-type parser and its 404/405 answers stay inside its
 * prefix, next to the host app's own routes. Every request goes to the shared neutral handler with
 * its raw body stream, so JSON and multipart limits, validation and errors are exactly those of
 * every other binding.
 *
 * @example
 * ```ts
 * const app = Fastify({ logger: true });
 * await app.register(fastifyPixport, { prefix: "/pixport", pipeline });
 * ```
 */
export const fastifyPixport: FastifyPluginAsync<FastifyPixportOptions> = async (fastify, options) => {
  const handler = resolveHandler(options, fastify.log);
  const routes = options.routes ?? options.handlerOptions?.routes ?? defaultRoutes;
  const prefix = fastify.prefix;

  // Scoped to this plugin: bodies stay unread streams, so the shared parsers apply their own limits
  // (Fastify's bodyLimit and JSON parser would answer differently from the other bindings).
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser("*", (_request, payload, done) => {
    done(null, payload);
  });

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    const response = await handler({
      ...toHttpRequest(request, prefix),
      signal: clientGoneSignal(reply.raw),
    });
    return send(reply, response);
  };
  const registered = new Set<string>();
  for (const route of routes) {
    const url = route.path.replace(/\{([^}]+)\}/g, ":$1");
    if (registered.has(`${route.method} ${url}`)) continue;
    registered.add(`${route.method} ${url}`);
    fastify.route({ method: route.method, url, handler: serve });
  }
  fastify.all("/", serve);
  fastify.all("/*", serve);
};

function resolveHandler(input: FastifyPixportOptions, log: FastifyBaseLogger): HttpHandler {
  const options = parseOptions(fastifyPixportOptionsSchema, input, "fastifyPixport");
  if (options.handler !== undefined) return options.handler;
  return createHttpHandler(options.pipeline as ImagePipeline, {
    ...options.handlerOptions,
    logger: options.handlerOptions?.logger ?? fromFastifyLogger(log),
  });
}

/** pixport's `Logger` over Fastify's pino-style logger (`log.error(context, message)`). */
export function fromFastifyLogger(log: FastifyBaseLogger): Logger {
  return {
    debug: (message, context) => log.debug(context ?? {}, message),
    info: (message, context) => log.info(context ?? {}, message),
    warn: (message, context) => log.warn(context ?? {}, message),
    error: (message, context) => log.error(context ?? {}, message),
  };
}

function toHttpRequest(request: FastifyRequest, prefix: string): HttpRequest {
  const url = request.url;
  const queryIndex = url.indexOf("?");
  const pathname = queryIndex === -1 ? url : url.slice(0, queryIndex);
  const path = prefix !== "" && pathname.startsWith(prefix) ? pathname.slice(prefix.length) : pathname;
  const body = request.body as Readable | undefined;
  return {
    method: request.method,
    path: path === "" ? "/" : path,
    query: new URLSearchParams(queryIndex === -1 ? "" : url.slice(queryIndex + 1)),
    headers: request.headers,
    // The parser above hands over the (possibly preParsing-transformed) payload; routes Fastify
    // does not parse (GET, or no body) keep the untouched request stream.
    body: body !== undefined && typeof body === "object" && Symbol.asyncIterator in body ? body : request.raw,
    // `protocol` and `host` honour Fastify's own `trustProxy` setting.
    baseUrl: `${request.protocol}://${request.host}${prefix}`,
  };
}

function send(reply: FastifyReply, response: HttpResponse): FastifyReply {
  reply.code(response.status);
  reply.headers(response.headers);
  return reply.send(
    response.body === null
      ? undefined
      : Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength),
  );
}
