import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AccountStore,
  type BlobStore,
  FILE_EXTENSIONS,
  IMAGE_FORMATS,
  IMAGE_ID_PATTERN,
  type ImagePipeline,
  type KeyStore,
  type Logger,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import express, { type Express, type Request, type Response } from "express";
import type { ServerConfig } from "./config.js";
import { createPixportRuntime, type RuntimeOptions } from "./runtime.js";

/** A running prebuilt server. */
export interface PixportServer {
  /** The Node HTTP server (already listening). */
  server: Server;
  app: Express;
  pipeline: ImagePipeline;
  keys: KeyStore;
  accounts: AccountStore;
  /** The resolved configuration (with the real port when `port` was 0). */
  config: ServerConfig;
  /** Absolute URL the server listens on, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** Stops accepting connections and waits (up to `shutdownTimeoutMs`) for in-flight requests. */
  close(): Promise<void>;
}

/** Programmatic extras of {@link startPixportServer} that a config file cannot express. */
export type StartPixportServerOptions = RuntimeOptions;

/** A JSON-lines logger on stderr, or a silent one. */
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
  const log = logger ?? createConsoleLogger(config.log);
  const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000, keepAliveTimeout: 5_000 });
  server.listen(config.port, config.host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host === "0.0.0.0" || host === "[::]" ? "localhost" : host}:${address.port}`;
  const resolved: ServerConfig =
    config.port === 0 && config.publicBaseUrl === "http://localhost:0"
      ? {
          ...config,
          port: address.port,
          publicBaseUrl: url,
          publicStorageBaseUrl:
            config.publicStorageBaseUrl === "http://localhost:0" ? url : config.publicStorageBaseUrl,
        }
      : config;

  const runtime = await createPixportRuntime(resolved, log, options);
  const { pipeline, keys, publicStore } = runtime;
  const sweep = () =>
    pipeline.sweepExpiredTestImages().then(
      (removed) => {
        if (removed > 0) log.info?.("retention sweep removed expired test images", { removed });
      },
      (error: unknown) => log.warn?.("retention sweep failed", { error: String(error) }),
    );
  void sweep();
  const sweepTimer =
    resolved.retentionSweepIntervalMs > 0 ? setInterval(sweep, resolved.retentionSweepIntervalMs) : undefined;
  sweepTimer?.unref();

  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", resolved.trustProxy);
  app.get("/healthz", (_request, response) => {
    response.json({ status: "ok" });
  });
  app.get("/images/:file", servePublicImage(publicStore, log));
  app.head("/images/:file", servePublicImage(publicStore, log));
  app.use(
    createExpressRouter(
      createHttpHandler(pipeline, {
        publicBaseUrl: resolved.publicBaseUrl,
        usageHeaderName: resolved.usageHeaderName,
        maxConcurrentUploads: resolved.maxConcurrentUploads,
        logger: log,
      }),
    ),
  );
  server.on("request", app);

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), resolved.shutdownTimeoutMs);
      timer.unref();
      await closed;
      clearTimeout(timer);
      clearInterval(sweepTimer);
      await runtime.close();
    })();
    return closing;
  };
  return { server, app, pipeline, keys, accounts: runtime.accounts, config: resolved, url, close };
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
      response.json({
        type: "https://docs.img-processing.com/errors/not-found",
        error: "Not Found",
        status: 404,
        message: "Image not found.",
      });
    };
    if (match === null || !IMAGE_ID_PATTERN.test(match[1] ?? "")) return notFound();
    const id = match[1] as string;
    const requested = match[2] === "jpeg" ? "jpg" : match[2];
    try {
      const formats = IMAGE_FORMATS.filter(
        (format) => requested === undefined || FILE_EXTENSIONS[format] === requested,
      );
      for (const format of formats) {
        const key = `images/${id}.${FILE_EXTENSIONS[format]}`;
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
      response.status(503).json({
        type: "https://docs.img-processing.com/errors/internal-error",
        error: "Internal Error",
        status: 503,
        message: "The image could not be read; retry later.",
      });
    }
  };
}
