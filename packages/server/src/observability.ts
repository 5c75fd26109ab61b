import path from "node:path";
import { type ImageCodec, isImagePipelineError, type Logger, type ModelPorts } from "@pixport/core";
import { defineImageCodec } from "@pixport/core/adapter-kit";
import { uncheckedTransform } from "@pixport/core/internal";
import type { RequestEvent } from "@pixport/http";
import { type Level, pino } from "pino";

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
