import path from "node:path";
import {
  defineImageCodec,
  type ImageCodec,
  type ImagePipeline,
  isImagePipelineError,
  type Logger,
  type MemoryReleaser,
  type ModelPorts,
} from "@pixport/core";
import { pipelineContext, uncheckedTransform } from "@pixport/core/internal";
import { errorBody, type RequestEvent } from "@pixport/http";
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
export function createPinoLogger(level: LogLevel): {
  logger: Logger;
  pino: pino.Logger;
  /** Failed writes of the destination (a full disk, a closed pipe) and drops since start. */
  stats(): LogStats;
} {
  const stats: LogStats = { writeErrors: 0, drops: 0 };
  // A log that cannot be written (ENOSPC, EPIPE) must never take the server down: SonicBoom
  // re-emits the failed write as an `error` event, which Node turns into an exit when nobody
  // listens. The error is counted and the write retried with the next line; meanwhile the backlog
  // is capped, and lines beyond it are dropped (and counted) instead of growing memory.
  const destination = pino.destination({ fd: 2, sync: false, maxLength: LOG_BACKLOG_BYTES });
  let failing = false;
  destination.on("error", () => {
    stats.writeErrors += 1;
    failing = true;
  });
  destination.on("write", () => {
    failing = false;
  });
  // pino flushes the backlog synchronously at exit, and SonicBoom's flushSync retries a write that
  // fails with anything but EAGAIN forever: a server on a full log disk could never exit. While the
  // last write failed, the backlog is dropped instead.
  const flushSync = destination.flushSync.bind(destination);
  destination.flushSync = () => {
    if (failing) stats.drops += 1;
    else flushSync();
  };
  destination.on("drop", () => {
    stats.drops += 1;
  });
  const base = pino({ level, base: { service: "pixport" } }, destination);
  const cwd = process.cwd();
  const at =
    (method: Level) =>
    (message: string, context?: Record<string, unknown>): void => {
      base[method](context === undefined ? {} : relativeContext(context, cwd), message);
    };
  return {
    pino: base,
    logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") },
    stats: () => ({ ...stats }),
  };
}

/** The context with the absolute paths of stack traces in its string fields made relative to `cwd`. */
function relativeContext(context: Record<string, unknown>, cwd: string): Record<string, unknown> {
  let changed: Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(context)) {
    if (typeof value !== "string" || !value.includes("\n    at ")) continue;
    changed ??= { ...context };
    changed[name] = relativeStackPaths(value, cwd);
  }
  return changed ?? context;
}

/**
 * Rewrites the file paths of a stack trace's frames relative to `cwd` (`file://` URLs too): logs
 * then name `packages/core/dist/index.js:12:5`, not where and under which user the server is
 * installed.
 */
export function relativeStackPaths(stack: string, cwd: string): string {
  return stack.replace(
    /(\(|at )(?:file:\/\/)?(\/[^\s():]+)(?=:\d+(?::\d+)?\)?$)/gm,
    (_whole, lead: string, file: string) => `${lead}${path.relative(cwd, file) || "."}`,
  );
}

/** What the server's log could not write. */
export interface LogStats {
  writeErrors: number;
  drops: number;
}

/** Log bytes waiting for their destination before new lines are dropped. */
const LOG_BACKLOG_BYTES = 4 * 1024 * 1024;

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
export interface ServerMetrics extends Instrumentation {
  registry: Registry;
  record(event: RequestEvent): void;
  /** `GET /metrics`: Prometheus text, behind a bearer token when one is configured. */
  handler(request: Request, response: Response): void;
}

/**
 * prom-client metrics: request count and duration by route, method and status; refusals by code
 * (rate limit, quota, overload); upload bytes received; the work gate's and the memory budget's
 * load and each model circuit's state, read at scrape time; delivered variants by cache result;
 * and Node's process metrics.
 */
export function createServerMetrics(
  pipeline: ImagePipeline,
  options: {
    token?: string | undefined;
    /** Its `stats()` (as `@pixport/allocator`'s releaser has) feeds the release counters. */
    memoryReleaser?:
      | (MemoryReleaser & { stats?(): { releases: number; ms: number; gcMs?: number } })
      | undefined;
    /** The server log's write failures (`createPinoLogger().stats`). */
    log?: (() => LogStats) | undefined;
  },
): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "pixport_" });
  const log = options.log;
  if (log !== undefined) {
    new Counter({
      name: "pixport_log_write_errors_total",
      help: "Failed writes of the log destination (a full disk, a closed pipe); the server goes on.",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(log().writeErrors);
      },
    });
    new Counter({
      name: "pixport_log_drops_total",
      help: "Log output dropped: a line refused while the backlog was full, or the backlog at exit while the destination failed.",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(log().drops);
      },
    });
  }
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
      const stats = pipeline.memory();
      this.set({ kind: "reserved" }, stats?.reservedBytes ?? 0);
      this.set({ kind: "budget" }, stats?.maxBytes ?? 0);
    },
  });
  // The codec's decoded-source cache, when the codec has one (the sharp codec's `sourceCache`).
  const sourceCache = (
    pipelineContext(pipeline).codec as { sourceCache?: { bytes: number; maxBytes: number } }
  ).sourceCache;
  if (sourceCache !== undefined) {
    new Gauge({
      name: "pixport_source_cache_bytes",
      help: "Decoded pixels of stored images the codec keeps for their next transforms, and the bound.",
      labelNames: ["kind"] as const,
      registers: [registry],
      collect() {
        this.set({ kind: "held" }, sourceCache.bytes);
        this.set({ kind: "bound" }, sourceCache.maxBytes);
      },
    });
  }
  // The allocator's free memory given back once the memory budget is idle (`@pixport/allocator`):
  // its releaser's running totals, turned into counter increments at scrape time.
  const releaser = options.memoryReleaser;
  if (releaser?.stats !== undefined) {
    const stats = releaser.stats.bind(releaser);
    let countedReleases = 0;
    let countedMs = 0;
    new Counter({
      name: "pixport_memory_releases_total",
      help: "Times the allocator's free memory was given back to the system, by allocator.",
      labelNames: ["allocator"] as const,
      registers: [registry],
      collect() {
        const { releases } = stats();
        this.inc({ allocator: releaser.allocator }, releases - countedReleases);
        countedReleases = releases;
      },
    });
    new Counter({
      name: "pixport_memory_release_seconds_total",
      help: "Time the allocator's releases took (on a libuv thread, not the event loop).",
      registers: [registry],
      collect() {
        const { ms } = stats();
        this.inc((ms - countedMs) / 1000);
        countedMs = ms;
      },
    });
    let countedGcMs = 0;
    new Counter({
      name: "pixport_memory_release_gc_seconds_total",
      help: "Time the releases' garbage collections held the event loop (with node --expose-gc, as the lean start sets, or a releaser that collects always).",
      registers: [registry],
      collect() {
        const gcMs = stats().gcMs ?? 0;
        this.inc((gcMs - countedGcMs) / 1000);
        countedGcMs = gcMs;
      },
    });
  }
  new Gauge({
    name: "pixport_model_circuit_state",
    help: "State of each model's circuit breaker (1 for the current state): closed, open or half-open.",
    labelNames: ["model", "state"] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { key, status } of pipeline.modelCircuits()) {
        for (const state of ["closed", "open", "half-open"] as const) {
          this.set({ model: key, state }, status === state ? 1 : 0);
        }
      }
    },
  });
  const deliveries = new Counter({
    name: "pixport_delivery_variants_total",
    help: "Variant URL answers by cache result: hit (served from the variant cache) or miss (computed).",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  const REFUSALS = new Set(["RATE_LIMITED", "QUOTA_EXCEEDED", "OVERLOADED", "REQUEST_TIMEOUT"]);
  const codecSeconds = new Histogram({
    name: "pixport_codec_job_seconds",
    help: "Time of codec jobs (decode, steps, encode) by first step and outcome.",
    labelNames: ["operation", "outcome"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const modelCalls = new Counter({
    name: "pixport_model_calls_total",
    help: "Calls to model providers by model and outcome (ok or the error code).",
    labelNames: ["model", "outcome"] as const,
    registers: [registry],
  });
  const modelSeconds = new Histogram({
    name: "pixport_model_call_seconds",
    help: "Time of model calls by model.",
    labelNames: ["model"] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  return {
    registry,
    codecJob(operation, seconds, outcome) {
      codecSeconds.observe({ operation, outcome }, seconds);
    },
    modelCall(model, outcome, seconds) {
      modelCalls.inc({ model, outcome });
      modelSeconds.observe({ model }, seconds);
    },
    record(event) {
      const labels = { route: event.route, method: event.method, status: String(event.status) };
      requests.inc(labels);
      duration.observe(labels, event.durationMs / 1000);
      responseBytes.inc({ route: event.route }, event.bytes);
      if (event.cache !== undefined) deliveries.inc({ result: event.cache === "HIT" ? "hit" : "miss" });
      if (event.errorCode !== undefined && REFUSALS.has(event.errorCode))
        refusals.inc({ code: event.errorCode });
    },
    handler(request, response) {
      if (options.token !== undefined && request.get("authorization") !== `Bearer ${options.token}`) {
        response.status(401).json(errorBody({ status: 401, message: "A bearer token is required." }));
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

/** What the instrumented codec and model ports report (bound to the metrics once they exist). */
export interface Instrumentation {
  codecJob(operation: string, seconds: number, outcome: string): void;
  modelCall(model: string, outcome: string, seconds: number): void;
}

const outcomeOf = (error: unknown): string => (isImagePipelineError(error) ? error.code : "error");

/**
 * The codec with every `transform` timed: the operation is the first step's type (`resize`,
 * `overlay`...) or `encode` for a step-less re-encode (uploads, convert).
 */
export function instrumentCodec(codec: ImageCodec, sink: () => Instrumentation): ImageCodec {
  // Built with the codec kit around the adapter's own transform: the core checks each job once
  // and calls this timed transform; a direct caller still gets the kit's checks.
  const transform = uncheckedTransform(codec);
  return defineImageCodec({
    ...codec,
    name: codec.name,
    capabilities: codec.capabilities,
    probe: (input) => codec.probe(input),
    async transform(request) {
      const operation = request.steps[0]?.type ?? "encode";
      const started = performance.now();
      try {
        const result = await transform(request);
        sink().codecJob(operation, (performance.now() - started) / 1000, "ok");
        return result;
      } catch (error) {
        sink().codecJob(operation, (performance.now() - started) / 1000, outcomeOf(error));
        throw error;
      }
    },
    ...("close" in codec ? { close: (codec as { close(): Promise<void> }).close.bind(codec) } : {}),
  } as ImageCodec);
}

/** The model ports with every call counted by model and outcome, and timed. */
export function instrumentModels(models: ModelPorts, sink: () => Instrumentation): ModelPorts {
  const wrap = <T extends object>(port: T | undefined, method: keyof T & string): T | undefined => {
    if (port === undefined) return undefined;
    const original = port[method] as unknown as (
      request: { model?: string },
      ...rest: unknown[]
    ) => Promise<unknown>;
    const call = async (request: { model?: string }, ...rest: unknown[]) => {
      const model = request?.model ?? "default";
      const started = performance.now();
      try {
        const result = await original.call(port, request, ...rest);
        sink().modelCall(model, "ok", (performance.now() - started) / 1000);
        return result;
      } catch (error) {
        sink().modelCall(model, outcomeOf(error), (performance.now() - started) / 1000);
        throw error;
      }
    };
    return new Proxy(port, {
      get: (target, property, receiver) =>
        property === method ? call : Reflect.get(target, property, receiver),
    });
  };
  return {
    vision: wrap(models.vision, "describe"),
    generator: wrap(models.generator, "generate"),
    classifier: wrap(models.classifier, "classify"),
    textExtractor: wrap(models.textExtractor, "extract"),
  };
}
