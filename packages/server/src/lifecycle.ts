import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { errorBody, errorResponse } from "@pixport/http";
import { defaultPublicBaseUrl, type ServerConfig } from "./config.js";

type LifecycleState = "starting" | "ready" | "draining";
type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/** The server's state between binding its port and closing: see {@link createLifecycle}. */
export type Lifecycle = ReturnType<typeof createLifecycle>;

/**
 * The server's one request listener: a gate that answers while the handler is being built, then
 * hands every request to the app. `drain()` flips readiness before connections are closed.
 */
export function createLifecycle() {
  let state: LifecycleState = "starting";
  let handler: Listener | undefined;
  const gate: Listener = (request, response) => {
    if (handler !== undefined) {
      handler(request, response);
      return;
    }
    answerWhileStarting(request, response);
  };
  return {
    gate,
    state: () => state,
    ready(app: Listener) {
      handler = app;
      state = "ready";
    },
    drain() {
      state = "draining";
    },
  };
}

/** Liveness answers 200 "starting", readiness 503, anything else an immediate 503 with Retry-After. */
function answerWhileStarting(request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? "/").split("?")[0];
  if (path === "/healthz") {
    writeJson(response, 200, { status: "starting" });
    return;
  }
  if (path === "/readyz") {
    writeJson(response, 503, { status: "starting" }, { "Retry-After": "1" });
    return;
  }
  // The body (if any) is not read; closing the connection after the answer discards it.
  writeError(
    response,
    new ImagePipelineError(ErrorCodes.STARTING, "The server is starting; retry in a moment.", {
      retryAfterSeconds: 1,
    }),
    { Connection: "close" },
  );
}

/**
 * Writes the contract's error body of `error` (the one code → status table: status, `code`,
 * message, `Retry-After`) on a response the handler does not answer, plus `headers`.
 */
export function writeError(
  response: ServerResponse,
  error: ImagePipelineError,
  headers: Record<string, string> = {},
): void {
  const answer = errorResponse(error);
  const body = answer.body ?? new Uint8Array();
  response.writeHead(answer.status, {
    ...answer.headers,
    "Content-Length": String(body.byteLength),
    ...headers,
  });
  response.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
}

function writeJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    ...headers,
  });
  response.end(text);
}

/** A bound listener and the config with the real port when `port` was 0. */
export interface Listening {
  server: Server;
  lifecycle: Lifecycle;
  /** Absolute URL the server listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  config: ServerConfig;
}

/**
 * Binds the port first (a port of 0 must be known before the runtime is built), so requests can
 * arrive before the handler exists: until it does, every request gets an immediate 503 with
 * Retry-After (liveness answers 200 "starting", readiness 503), never silence.
 */
export async function listen(config: ServerConfig): Promise<Listening> {
  const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 });
  const lifecycle = createLifecycle();
  server.on("request", lifecycle.gate);
  server.on("clientError", answerClientError);
  server.listen(config.port, config.host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host === "0.0.0.0" || host === "[::]" ? "localhost" : host}:${address.port}`;
  const portZero = defaultPublicBaseUrl(config.host, 0);
  const resolved: ServerConfig =
    config.port === 0 && config.publicBaseUrl === portZero
      ? {
          ...config,
          port: address.port,
          publicBaseUrl: url,
          publicStorageBaseUrl: config.publicStorageBaseUrl === portZero ? url : config.publicStorageBaseUrl,
        }
      : config;
  return { server, lifecycle, url, config: resolved };
}

/**
 * The server's `close()`: readiness turns 503 at once; after `shutdownDelayMs` the listener stops
 * accepting, idle connections close, in-flight requests get up to `shutdownTimeoutMs`, then
 * `afterDrain` releases the rest (timers, the runtime, the log). Every call returns the same promise.
 */
export function createShutdown(listening: Listening, afterDrain: () => Promise<void>): () => Promise<void> {
  const { server, lifecycle, config } = listening;
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      lifecycle.drain();
      if (config.shutdownDelayMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
      await afterDrain();
    })();
    return closing;
  };
}

/**
 * Node answers requests it cannot parse (a bad request line, headers over the limit, a header read
 * that times out) by itself, with an empty body; this gives them the contract's JSON error body.
 */
function answerClientError(error: NodeJS.ErrnoException & { bytesParsed?: number }, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, title, message] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "The request headers are too large."]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "The request was not received in time."]
        : [400, "Bad Request", "The request could not be parsed as HTTP."];
  const body = JSON.stringify(
    errorBody({ status, slug: "bad-request", title, message, code: ErrorCodes.BAD_REQUEST }),
  );
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
