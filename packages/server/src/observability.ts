import type { ImagePipeline, Logger } from "@pixport/core";
import type { RequestEvent } from "@pixport/http";
import type { Request, Response } from "express";
import { type Level, pino } from "pino";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Log levels of `logLevel` / `PIXPORT_LOG_LEVEL` / `--log-level`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The server's logger: pino, one JSON object per line on stderr (pipe it through `pino-pretty` to
 * read it in a terminal), adapted to pixport's `Logger` port. Contexts become fields; an `error`
 * field keeps the cause's text.
 */
export function createPinoLogger(level: LogLevel): { logger: Logger; pino: pino.Logger } {
  const base = pino({ level, base: { service: "pixport" } }, pino.destination({ fd: 2, sync: false }));
  const at =
    (method: Level) =>
    (message: string, context?: Record<string, unknown>): void => {
      base[method](context ?? {}, message);
    };
  return {
    pino: base,
    logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
  };
}

/**
 * One access line per answered API request: method, route template, status, duration, bytes,
 * request id, account and key record id. Never the key itself, nor any header.
 */
export function accessLogger(log: pino.Logger): (event: RequestEvent) => void {
  return (event) => {
    const line = {
      requestId: event.requestId,
      method: event.method,
      route: event.route,
      status: event.status,
      durationMs: Math.round(event.durationMs * 10) / 10,
      bytes: event.bytes,
      ...(event.accountId === undefined ? {} : { accountId: event.accountId, keyId: event.keyId }),
      ...(event.errorCode === undefined ? {} : { errorCode: event.errorCode }),
    };
    if (event.status >= 500) log.error(line, "request");
    else if (event.status >= 400) log.warn(line, "request");
    else log.info(line, "request");
  };
}

/** Prometheus metrics of one server (a registry of its own, so several servers in one process do not mix). */
export interface ServerMetrics {
  registry: Registry;
  record(event: RequestEvent): void;
  /** `GET /metrics`: Prometheus text, behind a bearer token when one is configured. */
  handler(request: Request, response: Response): void;
}

/**
 * prom-client metrics: request count and duration by route, method and status; refusals by code
 * (rate limit, quota, overload); upload bytes received; the work gate's and the memory budget's
 * load, read at scrape time; and Node's process metrics.
 */
export function createServerMetrics(
  pipeline: ImagePipeline,
  options: { token?: string | undefined },
): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "pixport_" });
  const requests = new Counter({
    name: "pixport_http_requests_total",
    help: "Answered API requests by route template, method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "pixport_http_request_duration_seconds",
    help: "Time from the request to its answer, by route template, method and status.",
    labelNames: ["route", "method", "status"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const refusals = new Counter({
    name: "pixport_refusals_total",
    help: "Requests refused by a policy, by error code (RATE_LIMITED, QUOTA_EXCEEDED, OVERLOADED, ...).",
    labelNames: ["code"] as const,
    registers: [registry],
  });
  const responseBytes = new Counter({
    name: "pixport_http_response_bytes_total",
    help: "Bytes of API response bodies, by route template.",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "pixport_work_gate_jobs",
    help: "Image jobs in the work gate, by state (active, queued).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const load = pipeline.load();
      this.set({ state: "active" }, load?.active ?? 0);
      this.set({ state: "queued" }, load?.queued ?? 0);
    },
  });
  new Gauge({
    name: "pixport_memory_budget_bytes",
    help: "Pixel memory reserved by running image jobs, and the budget.",
    labelNames: ["kind"] as const,
    registers: [registry],
    collect() {
      const stats = pipeline.context.memory?.stats();
      this.set({ kind: "reserved" }, stats?.reservedBytes ?? 0);
      this.set({ kind: "budget" }, stats?.maxBytes ?? 0);
    },
  });
  const REFUSALS = new Set(["RATE_LIMITED", "QUOTA_EXCEEDED", "OVERLOADED", "REQUEST_TIMEOUT"]);
  return {
    registry,
    record(event) {
      const labels = { route: event.route, method: event.method, status: String(event.status) };
      requests.inc(labels);
      duration.observe(labels, event.durationMs / 1000);
      responseBytes.inc({ route: event.route }, event.bytes);
      if (event.errorCode !== undefined && REFUSALS.has(event.errorCode))
        refusals.inc({ code: event.errorCode });
    },
    handler(request, response) {
      if (options.token !== undefined && request.get("authorization") !== `Bearer ${options.token}`) {
        response
          .status(401)
          .json({ status: 401, error: "Unauthorized", message: "A bearer token is required." });
        return;
      }
      registry.metrics().then(
        (text) => {
          response.setHeader("Content-Type", registry.contentType);
          response.end(text);
        },
        () => response.status(500).end(),
      );
    },
  };
}
