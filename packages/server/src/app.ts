import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { type DependencyContainer, resolve, Tokens } from "@pixport/container";
import type { AccountStore, ImagePipeline, KeyStore, Logger } from "@pixport/core";
import { createNodeListener, type HttpHandler, type RequestEvent } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import express, { type Express } from "express";
import { forgetLauncherPreload } from "./allocator.js";
import type { ServerConfig } from "./config.js";
import { createShutdown, type Lifecycle, listen } from "./lifecycle.js";
import { scheduleSweeps } from "./maintenance.js";
import { createServerMetrics } from "./metrics.js";
import { accessLogger, createPinoLogger, type Instrumentation, type LogStats } from "./observability.js";
import { mountPublicFiles } from "./public-files.js";
import { mountHealthRoutes } from "./readiness.js";
import { createPixportRuntime, type PixportRuntime, type RuntimeOptions } from "./runtime.js";

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
  const listening = await listen(config);
  const { server, lifecycle, url, config: resolved } = listening;
  let runtime: PixportRuntime;
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
  const stopSweeps = scheduleSweeps(runtime.pipeline, log, resolved.retentionSweepIntervalMs);
  const app = createApp(resolved, runtime, lifecycle);
  const access = pinoLogger === undefined ? undefined : accessLogger(pinoLogger.pino);
  const metrics = resolved.metrics.enabled ? createMetrics(resolved, runtime, pinoLogger?.stats) : undefined;
  observe = (event) => {
    access?.(event);
    metrics?.record(event);
  };
  if (metrics !== undefined) {
    instruments = metrics;
    app.get("/metrics", metrics.handler);
  }
  await mountRoutes(app, resolved, runtime, log);
  const httpHandler = resolve(runtime.container, Tokens.HttpHandler);
  app.use(createExpressRouter(httpHandler));
  lifecycle.ready(routeRequests(app, httpHandler, lifecycle));
  const close = createShutdown(listening, async () => {
    stopSweeps();
    await runtime.close();
    pinoLogger?.pino.flush();
  });
  return {
    server,
    app,
    pipeline: runtime.pipeline,
    container: runtime.container,
    keys: runtime.keys,
    accounts: runtime.accounts,
    config: resolved,
    url,
    ...(runtime.ocrEngine === undefined ? {} : { ocrEngine: runtime.ocrEngine }),
    close,
  };
}

/** Express with the draining header and the health routes; the API and the pages come after. */
function createApp(config: ServerConfig, runtime: PixportRuntime, lifecycle: Lifecycle): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.use((_request, response, next) => {
    // Requests that arrive on a kept-alive connection while draining are served, then the
    // connection closes, so clients reconnect to a node that is not going away.
    if (lifecycle.state() === "draining") response.setHeader("Connection", "close");
    next();
  });
  mountHealthRoutes(app, lifecycle, runtime.container);
  return app;
}

function createMetrics(config: ServerConfig, runtime: PixportRuntime, log: (() => LogStats) | undefined) {
  const { container } = runtime;
  return createServerMetrics(runtime.pipeline, {
    token: config.metrics.token,
    memoryReleaser: container.isRegistered(Tokens.MemoryReleaser, true)
      ? resolve(container, Tokens.MemoryReleaser)
      : undefined,
    log,
  });
}

/** The pages (when on) and the published files. */
async function mountRoutes(app: Express, config: ServerConfig, runtime: PixportRuntime, log: Logger) {
  if (config.pages.playground || config.pages.docs) {
    // Loaded only when a page is on: with both off, nothing of the pages is in the process.
    const { createPlaygroundSite } = await import("@pixport/playground");
    app.use(createPlaygroundSite(config.pages).middleware);
  }
  mountPublicFiles(app, runtime.publicStore, log);
}

/**
 * Delivered variants (`GET`/`HEAD /v/...`) skip Express: the same handler behind a bare node:http
 * listener, since a cache hit is a few microseconds of work and Express's routing cost about as
 * much again (bench/delivery.mjs). Every other path goes to the app.
 */
function routeRequests(app: Express, httpHandler: HttpHandler, lifecycle: Lifecycle) {
  const variants = createNodeListener(httpHandler);
  return (request: IncomingMessage, response: ServerResponse) => {
    if ((request.method === "GET" || request.method === "HEAD") && request.url?.startsWith("/v/")) {
      if (lifecycle.state() === "draining") response.setHeader("Connection", "close");
      variants(request, response);
      return;
    }
    app(request, response);
  };
}
