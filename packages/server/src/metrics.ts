import type { ImagePipeline, MemoryReleaser } from "@pixport/core";
import { pipelineContext } from "@pixport/core/internal";
import { errorBody, type RequestEvent } from "@pixport/http";
import type { Request, Response } from "express";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Instrumentation, LogStats } from "./observability.js";

/** Prometheus metrics of one server (a registry of its own, so several servers in one process do not mix). */
export interface ServerMetrics extends Instrumentation {
  registry: Registry;
  record(event: RequestEvent): void;
  /** `GET /metrics`: Prometheus text, behind a bearer token when one is configured. */
  handler(request: Request, response: Response): void;
}

/** A memory releaser whose `stats()` (as `@pixport/allocator`'s releaser has) feeds the release counters. */
type CountingReleaser = MemoryReleaser & { stats?(): { releases: number; ms: number; gcMs?: number } };

/**
 * prom-client metrics: request count and duration by route, method and status; refusals by code
 * (rate limit, quota, overload); response bytes; the work gate's and the memory budget's load and
 * each model circuit's state, read at scrape time; delivered variants by cache result; codec job
 * and model call times; the allocator's releases; and Node's process metrics.
 */
export function createServerMetrics(
  pipeline: ImagePipeline,
  options: {
    token?: string | undefined;
    memoryReleaser?: CountingReleaser | undefined;
    /** The server log's write failures (`createPinoLogger().stats`). */
    log?: (() => LogStats) | undefined;
  },
): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "pixport_" });
  if (options.log !== undefined) logCounters(registry, options.log);
  const record = requestMetrics(registry);
  loadGauges(registry, pipeline);
  if (options.memoryReleaser?.stats !== undefined) releaseCounters(registry, options.memoryReleaser);
  return {
    registry,
    record,
    ...engineMetrics(registry),
    handler: metricsHandler(registry, options.token),
  };
}

/** What the log could not write: failed writes and dropped output, read at scrape time. */
function logCounters(registry: Registry, log: () => LogStats): void {
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

const REFUSALS = new Set([
  "RATE_LIMITED",
  "QUOTA_EXCEEDED",
  "OVERLOADED",
  "OCR_AT_CAPACITY",
  "REQUEST_TIMEOUT",
]);

/** Per answered request: count, duration, bytes, refusals by code and variant cache results. */
function requestMetrics(registry: Registry): (event: RequestEvent) => void {
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
  const deliveries = new Counter({
    name: "pixport_delivery_variants_total",
    help: "Variant URL answers by cache result: hit (served from the variant cache) or miss (computed).",
    labelNames: ["result"] as const,
    registers: [registry],
  });
  return (event) => {
    const labels = { route: event.route, method: event.method, status: String(event.status) };
    requests.inc(labels);
    duration.observe(labels, event.durationMs / 1000);
    responseBytes.inc({ route: event.route }, event.bytes);
    if (event.cache !== undefined) deliveries.inc({ result: event.cache === "HIT" ? "hit" : "miss" });
    if (event.errorCode !== undefined && REFUSALS.has(event.errorCode))
      refusals.inc({ code: event.errorCode });
  };
}

/** Gauges read at scrape time: the work gate, the memory budget, the source cache, the model circuits. */
function loadGauges(registry: Registry, pipeline: ImagePipeline): void {
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
}

/**
 * The allocator's free memory given back once the memory budget is idle (`@pixport/allocator`):
 * its releaser's running totals, turned into counter increments at scrape time.
 */
function releaseCounters(registry: Registry, releaser: CountingReleaser): void {
  const stats = () => releaser.stats?.() ?? { releases: 0, ms: 0 };
  const counted = { releases: 0, ms: 0, gcMs: 0 };
  new Counter({
    name: "pixport_memory_releases_total",
    help: "Times the allocator's free memory was given back to the system, by allocator.",
    labelNames: ["allocator"] as const,
    registers: [registry],
    collect() {
      const { releases } = stats();
      this.inc({ allocator: releaser.allocator }, releases - counted.releases);
      counted.releases = releases;
    },
  });
  new Counter({
    name: "pixport_memory_release_seconds_total",
    help: "Time the allocator's releases took (on a libuv thread, not the event loop).",
    registers: [registry],
    collect() {
      const { ms } = stats();
      this.inc((ms - counted.ms) / 1000);
      counted.ms = ms;
    },
  });
  new Counter({
    name: "pixport_memory_release_gc_seconds_total",
    help: "Time the releases' garbage collections held the event loop (with node --expose-gc, as the lean start sets, or a releaser that collects always).",
    registers: [registry],
    collect() {
      const gcMs = stats().gcMs ?? 0;
      this.inc((gcMs - counted.gcMs) / 1000);
      counted.gcMs = gcMs;
    },
  });
}

/** Codec job times and model call outcomes: the {@link Instrumentation} the runtime reports to. */
function engineMetrics(registry: Registry): Instrumentation {
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
    codecJob(operation, seconds, outcome) {
      codecSeconds.observe({ operation, outcome }, seconds);
    },
    modelCall(model, outcome, seconds) {
      modelCalls.inc({ model, outcome });
      modelSeconds.observe({ model }, seconds);
    },
  };
}

function metricsHandler(registry: Registry, token: string | undefined) {
  return (request: Request, response: Response): void => {
    if (token !== undefined && request.get("authorization") !== `Bearer ${token}`) {
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
  };
}
