import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type DependencyContainer, resolve, Tokens } from "@pixport/container";
import {
  type AccountStore,
  type BlobStore,
  ErrorCodes,
  FILE_EXTENSIONS,
  IMAGE_FORMATS,
  IMAGE_ID_PATTERN,
  type ImagePipeline,
  type KeyStore,
  type Logger,
} from "@pixport/core";
import { publicKeyFor } from "@pixport/core/internal";
import { createNodeListener, errorBody, type RequestEvent } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import express, { type Express, type Request, type Response } from "express";
import { forgetLauncherPreload } from "./allocator.js";
import { defaultPublicBaseUrl, type ServerConfig } from "./config.js";
import {
  accessLogger,
  createPinoLogger,
  createServerMetrics,
  type Instrumentation,
} from "./observability.js";
import { createPixportRuntime, type RuntimeOptions } from "./runtime.js";

/** A running prebuilt server. */
export interface PixportServer {
  /** The Node HTTP server (already listening). */
  server: Server;
  app: Express;
  pipeline: ImagePipeline;
  /** The container the server was composed in (see `@pixport/container`). */
  container: DependencyContainer;
  keys: KeyStore;
  accounts: AccountStore;
  /** The resolved configuration (with the real port when `port` was 0). */
  config: ServerConfig;
  /** Absolute URL the server listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** The embedded OCR's engine (see `ocrEngine`), when extract-formatted-text uses it. */
  ocrEngine?: "wasm" | "native";
  /** Stops accepting connections and waits (up to `shutdownTimeoutMs`) for in-flight requests. */
  close(): Promise<void>;
}

/** Programmatic extras of {@link startPixportServer} that a config file cannot express. */
export type StartPixportServerOptions = RuntimeOptions;

/**
 * A JSON-lines logger on stderr, or a silent one.
 *
 * @example
 * ```ts
 * const server = await startPixportServer(config, createConsoleLogger(true));
 * ```
 */
export function createConsoleLogger(enabled: boolean): Logger {
  if (!enabled) return {};
  const write = (level: string) => (message: string, context?: Record<string, unknown>) => {
    process.stderr.write(
      `${JSON.stringify({ time: new Date().toISOString(), level, message, ...context })}\n`,
    );
  };
  return { info: write("info"), warn: write("warn"), error: write("error") };
}

/**
 * Starts the prebuilt deployment: the configured codec (sharp by default, or jimp), files under the
 * data directory, Express, no external service. Published images are served without a key under `/images/{id}.{ext}`.
 */
export async function startPixportServer(
  config: ServerConfig,
  logger?: Logger,
  options: StartPixportServerOptions = {},
): Promise<PixportServer> {
  // Child processes (native tesseract, ONNX inference) keep the system malloc they were measured with.
  forgetLauncherPreload();
  const pinoLogger = logger === undefined && config.log ? createPinoLogger(config.logLevel) : undefined;
  const log = logger ?? pinoLogger?.logger ?? createConsoleLogger(false);
  // Bound once the pipeline exists (the metrics read its load); the handler calls it per request.
  let observe: (event: RequestEvent) => void = () => undefined;
  let instruments: Instrumentation = { codecJob: () => undefined, modelCall: () => undefined };
  const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 });
  // The port is bound first (a port of 0 must be known before the runtime is built), so requests
  // can arrive before the handler exists: until it does, every request gets an immediate 503 with
  // Retry-After (liveness answers 200 "starting", readiness 503), never silence.
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

  let runtime: Awaited<ReturnType<typeof createPixportRuntime>>;
  try {
    runtime = await createPixportRuntime(resolved, log, {
      ...options,
      onRequestDone: (event) => {
        observe(event);
        options.onRequestDone?.(event);
      },
      instrumentation: () => instruments,
    });
  } catch (error) {
    server.close();
    server.closeAllConnections();
    throw error;
  }
  const { pipeline, keys, publicStore } = runtime;
  const sweep = () =>
    Promise.all([
      pipeline.sweepExpiredTestImages().then(
        (removed) => {
          if (removed > 0) log.info?.("retention sweep removed expired test images", { removed });
        },
        (error: unknown) => log.warn?.("retention sweep failed", { error: String(error) }),
      ),
      // What interrupted writes left behind (bytes without a record, copies without a publish).
      pipeline.sweepOrphans().then(
        (removed) => {
          if (removed.privateBlobs + removed.publicCopies > 0) log.info?.("orphan sweep", { ...removed });
        },
        (error: unknown) => log.warn?.("orphan sweep failed", { error: String(error) }),
      ),
    ]);
  void sweep();
  const sweepTimer =
    resolved.retentionSweepIntervalMs > 0 ? setInterval(sweep, resolved.retentionSweepIntervalMs) : undefined;
  sweepTimer?.unref();

  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", resolved.trustProxy);
  app.use((_request, response, next) => {
    // Requests that arrive on a kept-alive connection while draining are served, then the
    // connection closes, so clients reconnect to a node that is not going away.
    if (lifecycle.state() === "draining") response.setHeader("Connection", "close");
    next();
  });
  app.get("/healthz", (_request, response) => {
    response.json({ status: "ok" });
  });
  // Readiness: 200 while the server takes traffic; 503 while it starts (answered by the gate) and
  // from the moment `close()` begins, before any connection is drained.
  // Readiness probes the stores every request needs, each with a short deadline, and names what
  // failed: the image records, the private blob store and the key store (Redis, when configured).
  const blobStore = resolve(runtime.container, Tokens.BlobStore);
  const imageRepository = resolve(runtime.container, Tokens.ImageRepository);
  const probes: Record<string, () => Promise<unknown>> = {
    images: () => imageRepository.get("image_readinessprobe000000000"),
    blobs: () => blobStore.stat("readyz/probe"),
    keys: () => keys.findByHash("0".repeat(64)),
  };
  app.get("/readyz", (_request, response) => {
    if (lifecycle.state() === "draining") {
      response.status(503).setHeader("Retry-After", "1").json({ status: "draining" });
      return;
    }
    void Promise.all(
      Object.entries(probes).map(async ([name, probe]) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("no answer within 1 s")), 1_000);
        });
        try {
          await Promise.race([probe(), deadline]);
          return null;
        } catch {
          return name;
        } finally {
          clearTimeout(timer);
        }
      }),
    ).then((results) => {
      const failed = results.filter((name): name is string => name !== null);
      if (failed.length === 0) response.json({ status: "ready" });
      else response.status(503).setHeader("Retry-After", "1").json({ status: "unready", failed });
    });
  });
  const access = pinoLogger === undefined ? undefined : accessLogger(pinoLogger.pino);
  const metrics = resolved.metrics.enabled
    ? createServerMetrics(pipeline, {
        token: resolved.metrics.token,
        memoryReleaser: runtime.container.isRegistered(Tokens.MemoryReleaser, true)
          ? resolve(runtime.container, Tokens.MemoryReleaser)
          : undefined,
        log: pinoLogger?.stats,
      })
    : undefined;
  observe = (event) => {
    access?.(event);
    metrics?.record(event);
  };
  if (metrics !== undefined) instruments = metrics;
  if (metrics !== undefined) app.get("/metrics", metrics.handler);
  if (resolved.pages.playground || resolved.pages.docs) {
    // Loaded only when a page is on: with both off, nothing of the pages is in the process.
    const { createPlaygroundSite } = await import("@pixport/playground");
    app.use(createPlaygroundSite(resolved.pages).middleware);
  }
  app.get("/images/:file", servePublicImage(publicStore, log));
  app.head("/images/:file", servePublicImage(publicStore, log));
  const httpHandler = resolve(runtime.container, Tokens.HttpHandler);
  app.use(createExpressRouter(httpHandler));
  // Delivered variants (`GET`/`HEAD /v/...`) skip Express: the same handler behind a bare node:http
  // listener, since a cache hit is a few microseconds of work and Express's routing cost about as
  // much again (bench/delivery.mjs). Every other path keeps the app above.
  const variants = createNodeListener(httpHandler);
  lifecycle.ready((request, response) => {
    if ((request.method === "GET" || request.method === "HEAD") && request.url?.startsWith("/v/")) {
      if (lifecycle.state() === "draining") response.setHeader("Connection", "close");
      variants(request, response);
      return;
    }
    app(request, response);
  });

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      lifecycle.drain();
      if (resolved.shutdownDelayMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, resolved.shutdownDelayMs));
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), resolved.shutdownTimeoutMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
      clearInterval(sweepTimer);
      await runtime.close();
      pinoLogger?.pino.flush();
    })();
    return closing;
  };
  return {
    server,
    app,
    pipeline,
    container: runtime.container,
    keys,
    accounts: runtime.accounts,
    config: resolved,
    url,
    ...(runtime.ocrEngine === undefined ? {} : { ocrEngine: runtime.ocrEngine }),
    close,
  };
}

type LifecycleState = "starting" | "ready" | "draining";

/**
 * The server's one request listener: a gate that answers while the handler is being built, then
 * hands every request to the app. `drain()` flips readiness before connections are closed.
 */
function createLifecycle() {
  let state: LifecycleState = "starting";
  let handler: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  const gate = (request: IncomingMessage, response: ServerResponse) => {
    if (handler !== undefined) {
      handler(request, response);
      return;
    }
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
    writeJson(
      response,
      503,
      errorBody({
        status: 503,
        message: "The server is starting; retry in a moment.",
        code: ErrorCodes.OVERLOADED,
      }),
      { "Retry-After": "1", Connection: "close" },
    );
  };
  return {
    gate,
    state: () => state,
    ready(app: (request: IncomingMessage, response: ServerResponse) => void) {
      handler = app;
      state = "ready";
    },
    drain() {
      state = "draining";
    },
  };
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

const PUBLIC_FILE = /^(image_[a-zA-Z0-9]{24})(?:\.(jpg|jpeg|png|webp))?$/;

/**
 * Serves published copies without a key: long-lived cache headers (bytes under a URL never change),
 * a strong ETag, the exact content type and `nosniff`. Unpublished or deleted images answer 404
 * with a short cache lifetime.
 */
function servePublicImage(store: BlobStore, log: Logger) {
  return async (request: Request, response: Response) => {
    const match = PUBLIC_FILE.exec(String(request.params.file));
    response.setHeader("X-Content-Type-Options", "nosniff");
    const notFound = () => {
      response.status(404).setHeader("Cache-Control", "public, max-age=10");
      response.json(errorBody({ status: 404, message: "Image not found." }));
    };
    if (match === null || !IMAGE_ID_PATTERN.test(match[1] ?? "")) return notFound();
    const id = match[1] as string;
    const requested = match[2] === "jpeg" ? "jpg" : match[2];
    try {
      const formats = IMAGE_FORMATS.filter(
        (format) => requested === undefined || FILE_EXTENSIONS[format] === requested,
      );
      for (const format of formats) {
        const key = publicKeyFor(id, format);
        const info = await store.stat(key);
        if (info === null) continue;
        const etag = `"${id}-${info.size}"`;
        response.setHeader("ETag", etag);
        response.setHeader("Cache-Control", info.cacheControl ?? "public, max-age=31536000, immutable");
        response.setHeader("Content-Type", info.contentType);
        if (request.headers["if-none-match"] === etag) {
          response.status(304).end();
          return;
        }
        const data = await store.get(key);
        if (data === null) continue;
        response.setHeader("Content-Length", String(data.byteLength));
        response.status(200).end(request.method === "HEAD" ? undefined : Buffer.from(data));
        return;
      }
      notFound();
    } catch (error) {
      log.error?.("serving a public image failed", { id, error: String(error) });
      response
        .status(503)
        .json(errorBody({ status: 503, message: "The image could not be read; retry later." }));
    }
  };
}
