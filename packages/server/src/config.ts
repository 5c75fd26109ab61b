import { readFile } from "node:fs/promises";
import path from "node:path";
import { type PixportContainerConfig, pixportContainerConfigSchema } from "@pixport/container";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";
import { LOG_LEVELS } from "./observability.js";

/**
 * Configuration of the prebuilt server: everything `@pixport/container` composes (its
 * `pixportContainerConfigSchema`: storage, Redis, codec, models, OCR, background remover, delivery,
 * limits...) plus the listener, logging, pages and shutdown. Sources, later ones winning: defaults,
 * the JSON config file (`--config` or `PIXPORT_CONFIG`), `PIXPORT_*` environment variables,
 * command-line flags.
 */
export const serverConfigSchema = pixportContainerConfigSchema.extend({
  /** TCP port. @default 3000 */
  port: z.number().int().min(0).max(65535).default(3000),
  /** Interface to listen on. @default "0.0.0.0" */
  host: z.string().min(1).default("0.0.0.0"),
  /** Directory holding blobs, metadata and keys. @default "./.pixport-data" */
  dataDir: z.string().min(1).default(".pixport-data"),
  /**
   * Where image bytes live: `fs` (the data directory) or `s3` (an S3 or S3-compatible bucket,
   * configured under `s3`), for several stateless nodes. See the README section "Scale-out: S3 and
   * Redis". @default "fs"
   */
  storage: z.enum(["fs", "s3"]).default("fs"),
  /**
   * Where image metadata lives: `fs` (the data directory) or `redis` (needs `redisUrl`), for
   * several stateless nodes. @default "fs"
   */
  metadata: z.enum(["fs", "redis"]).default("fs"),
  /**
   * Absolute URL clients use to reach the API (list links). @default `http://{host}:{port}` of
   * the bound address (`localhost` when bound to 0.0.0.0 or ::)
   */
  publicBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  /**
   * Absolute base of published images' URLs (`{publicStorageBaseUrl}/images/{id}.{ext}`). The
   * server serves them itself under `/images/`; put a CDN in front and set this to its URL.
   * @default publicBaseUrl
   */
  publicStorageBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** Express `trust proxy` setting (hops or `true`). @default false */
  trustProxy: z.union([z.boolean(), z.number().int().nonnegative()]).default(false),
  /** How long SIGTERM waits for in-flight requests, ms. @default 10000 */
  shutdownTimeoutMs: z.number().int().positive().default(10_000),
  /**
   * On SIGTERM, how long `/readyz` answers 503 while the listener still accepts requests, before
   * draining begins (so a load balancer stops routing here first). @default 0
   */
  shutdownDelayMs: z.number().int().nonnegative().max(600_000).default(0),
  /** Log requests and errors as JSON lines on stderr. @default true */
  log: z.boolean().default(true),
  /** Least severe level logged (pino levels). @default "info" */
  logLevel: z.enum(LOG_LEVELS).default("info"),
  /**
   * `GET /metrics` in Prometheus text: on by default; with `token`, scrapes must send
   * `Authorization: Bearer <token>`. @default { enabled: true }
   */
  metrics: z
    .object({ enabled: z.boolean().default(true), token: z.string().min(16).optional() })
    .strict()
    .default({ enabled: true }),
  /**
   * The web pages: the playground at `/` and the API reference (Swagger UI) at `/docs`, both
   * served from this process (no CDN). Turned off, their package is not even loaded.
   * Environment: `PIXPORT_PLAYGROUND`, `PIXPORT_DOCS` (`0`/`false`/`off` to disable).
   * @default { playground: true, docs: true }
   */
  pages: z
    .object({ playground: z.boolean().default(true), docs: z.boolean().default(true) })
    .strict()
    .default({ playground: true, docs: true }),
  /** How often the retention sweep runs, ms (it also runs at start); 0 disables it. @default 1 hour */
  retentionSweepIntervalMs: z
    .number()
    .int()
    .nonnegative()
    .default(60 * 60 * 1000),
});

export type ServerConfig = z.output<typeof serverConfigSchema> & {
  publicBaseUrl: string;
  publicStorageBaseUrl: string;
};
export type ServerConfigInput = z.input<typeof serverConfigSchema>;

const ENV: Record<string, { key: string; kind: "number" | "string" | "boolean" | "limit" }> = {
  PIXPORT_PORT: { key: "port", kind: "number" },
  PIXPORT_REDIS_URL: { key: "redisUrl", kind: "string" },
  PIXPORT_HOST: { key: "host", kind: "string" },
  PIXPORT_DATA_DIR: { key: "dataDir", kind: "string" },
  PIXPORT_PUBLIC_BASE_URL: { key: "publicBaseUrl", kind: "string" },
  PIXPORT_PUBLIC_STORAGE_BASE_URL: { key: "publicStorageBaseUrl", kind: "string" },
  PIXPORT_ENCODE_QUALITY: { key: "encodeQuality", kind: "number" },
  PIXPORT_USAGE_HEADER: { key: "usageHeaderName", kind: "string" },
  PIXPORT_MAX_CONCURRENT_UPLOADS: { key: "maxConcurrentUploads", kind: "number" },
  PIXPORT_MAX_CONCURRENT_UPLOADS_PER_ACCOUNT: { key: "maxConcurrentUploadsPerAccount", kind: "number" },
  PIXPORT_MIN_UPLOAD_BYTES_PER_SECOND: { key: "minUploadBytesPerSecond", kind: "number" },
  PIXPORT_UPLOAD_GRACE_MS: { key: "uploadGraceMs", kind: "number" },
  PIXPORT_SHUTDOWN_TIMEOUT_MS: { key: "shutdownTimeoutMs", kind: "number" },
  PIXPORT_SHUTDOWN_DELAY_MS: { key: "shutdownDelayMs", kind: "number" },
  PIXPORT_LOG: { key: "log", kind: "boolean" },
  PIXPORT_LOG_LEVEL: { key: "logLevel", kind: "string" },
  PIXPORT_CODEC: { key: "codec", kind: "string" },
  PIXPORT_OCR_ENGINE: { key: "ocrEngine", kind: "string" },
  PIXPORT_BLOB_CACHE_BYTES: { key: "blobCacheBytes", kind: "number" },
  PIXPORT_RELEASE_FREE_MEMORY: { key: "releaseFreeMemory", kind: "boolean" },
  PIXPORT_VIPS_CACHE: { key: "vipsCache", kind: "boolean" },
  PIXPORT_MAX_UPLOAD_BYTES: { key: "maxUploadBytes", kind: "limit" },
  PIXPORT_MAX_INPUT_PIXELS: { key: "maxInputPixels", kind: "limit" },
  PIXPORT_MAX_INPUT_SIDE: { key: "maxInputSide", kind: "limit" },
  PIXPORT_MAX_OUTPUT_SIDE: { key: "maxOutputSide", kind: "limit" },
  PIXPORT_STORAGE: { key: "storage", kind: "string" },
  PIXPORT_METADATA: { key: "metadata", kind: "string" },
};

/** `workQueue.*` from the environment. */
const WORK_QUEUE_ENV: Record<string, string> = {
  PIXPORT_MAX_ACTIVE_JOBS: "maxActive",
  PIXPORT_MAX_QUEUED_JOBS: "maxQueued",
  PIXPORT_MAX_JOB_WAIT_MS: "maxWaitMs",
};

/** `ocr.*` from the environment. */
const OCR_ENV: Record<string, string> = {
  PIXPORT_OCR_WORKERS: "workers",
  PIXPORT_OCR_MAX_QUEUED: "maxQueued",
  PIXPORT_OCR_TIMEOUT_MS: "timeoutMs",
  PIXPORT_OCR_IDLE_MS: "idleMs",
  PIXPORT_OCR_MAX_PAGE_PIXELS: "maxPagePixels",
};

/** `backgroundRemoval.*` from the environment. */
const BACKGROUND_ENV: Record<string, { key: string; kind: "string" | "number" }> = {
  PIXPORT_BACKGROUND_ENGINE: { key: "engine", kind: "string" },
  PIXPORT_BACKGROUND_MODEL: { key: "model", kind: "string" },
  PIXPORT_BACKGROUND_MODEL_FAMILY: { key: "family", kind: "string" },
  PIXPORT_BACKGROUND_THREADS: { key: "threads", kind: "number" },
  PIXPORT_BACKGROUND_TIMEOUT_MS: { key: "timeoutMs", kind: "number" },
};

/** `s3.*` from the environment; AWS credentials are left to the SDK's default chain. */
const S3_ENV: Record<string, { key: string; kind: "string" | "boolean" }> = {
  PIXPORT_S3_BUCKET: { key: "bucket", kind: "string" },
  PIXPORT_S3_REGION: { key: "region", kind: "string" },
  PIXPORT_S3_ENDPOINT: { key: "endpoint", kind: "string" },
  PIXPORT_S3_FORCE_PATH_STYLE: { key: "forcePathStyle", kind: "boolean" },
  PIXPORT_S3_PREFIX: { key: "prefix", kind: "string" },
  PIXPORT_S3_PUBLIC_BUCKET: { key: "publicBucket", kind: "string" },
  PIXPORT_S3_PUBLIC_PREFIX: { key: "publicPrefix", kind: "string" },
  PIXPORT_S3_CHECKSUMS: { key: "checksums", kind: "string" },
};

function fromEnvironment(environment: NodeJS.ProcessEnv): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const limits: Record<string, unknown> = {};
  for (const [name, { key, kind }] of Object.entries(ENV)) {
    const raw = environment[name];
    if (raw === undefined || raw === "") continue;
    // A number that does not parse stays the text the operator wrote, so the error can quote it.
    const value =
      kind === "string"
        ? raw
        : kind === "boolean"
          ? !/^(0|false|no|off)$/i.test(raw)
          : /^-?\d+(\.\d+)?$/.test(raw.trim())
            ? Number(raw)
            : raw;
    if (kind === "limit") limits[key] = value;
    else result[key] = value;
  }
  if (environment.PORT !== undefined && result.port === undefined) result.port = Number(environment.PORT);
  if (Object.keys(limits).length > 0) result.limits = limits;
  const s3: Record<string, unknown> = {};
  for (const [name, { key, kind }] of Object.entries(S3_ENV)) {
    const raw = environment[name];
    if (raw === undefined || raw === "") continue;
    s3[key] = kind === "string" ? raw : !/^(0|false|no|off)$/i.test(raw);
  }
  if (Object.keys(s3).length > 0) result.s3 = s3;
  const background: Record<string, unknown> = {};
  for (const [name, { key, kind }] of Object.entries(BACKGROUND_ENV)) {
    const raw = environment[name];
    if (raw === undefined || raw === "") continue;
    background[key] = kind === "string" ? raw : Number(raw);
  }
  const metricsEnabled = environment.PIXPORT_METRICS;
  const metricsToken = environment.PIXPORT_METRICS_TOKEN;
  if (
    (metricsEnabled !== undefined && metricsEnabled !== "") ||
    (metricsToken !== undefined && metricsToken !== "")
  ) {
    result.metrics = {
      ...(metricsEnabled ? { enabled: !/^(0|false|no|off)$/i.test(metricsEnabled) } : {}),
      ...(metricsToken ? { token: metricsToken } : {}),
    };
  }
  const pages: Record<string, boolean> = {};
  for (const [name, key] of [
    ["PIXPORT_PLAYGROUND", "playground"],
    ["PIXPORT_DOCS", "docs"],
  ] as const) {
    const raw = environment[name];
    if (raw !== undefined && raw !== "") pages[key] = !/^(0|false|no|off)$/i.test(raw);
  }
  if (Object.keys(pages).length > 0) result.pages = pages;
  const signingKeys = environment.PIXPORT_DELIVERY_SIGNING_KEYS;
  if (signingKeys !== undefined && signingKeys !== "") {
    result.delivery = {
      ...(result.delivery as Record<string, unknown> | undefined),
      signingKeys: signingKeys
        .split(",")
        .map((key) => key.trim())
        .filter((key) => key !== ""),
    };
  }
  const sourceCacheBytes = environment.PIXPORT_SOURCE_CACHE_BYTES;
  if (sourceCacheBytes !== undefined && sourceCacheBytes !== "") {
    result.sourceCacheBytes = /^(false|off)$/i.test(sourceCacheBytes) ? 0 : Number(sourceCacheBytes);
  }
  const memoryBytes = environment.PIXPORT_MEMORY_BUDGET_BYTES;
  if (memoryBytes !== undefined && memoryBytes !== "") {
    result.memoryBudget = /^(0|false|off)$/i.test(memoryBytes) ? false : { maxBytes: Number(memoryBytes) };
  }
  const workQueue: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(WORK_QUEUE_ENV)) {
    const raw = environment[name];
    if (raw !== undefined && raw !== "") workQueue[key] = Number(raw);
  }
  if (Object.keys(workQueue).length > 0) result.workQueue = workQueue;
  const ocr: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(OCR_ENV)) {
    const raw = environment[name];
    if (raw !== undefined && raw !== "") ocr[key] = Number(raw);
  }
  if (Object.keys(ocr).length > 0) result.ocr = ocr;
  const urlImport: Record<string, unknown> = {};
  const importEnabled = environment.PIXPORT_URL_IMPORT;
  if (importEnabled !== undefined && importEnabled !== "") {
    urlImport.enabled = !/^(0|false|no|off)$/i.test(importEnabled);
  }
  const origins = environment.PIXPORT_URL_IMPORT_ORIGINS;
  if (origins !== undefined && origins.trim() !== "") {
    urlImport.additionalOrigins = origins
      .split(",")
      .map((origin) => origin.trim())
      .filter((origin) => origin !== "");
  }
  const importTimeout = environment.PIXPORT_URL_IMPORT_TIMEOUT_MS;
  if (importTimeout !== undefined && importTimeout !== "") urlImport.timeoutMs = Number(importTimeout);
  if (Object.keys(urlImport).length > 0) result.urlImport = urlImport;
  // A model path alone selects the ONNX engine.
  if (background.model !== undefined && background.engine === undefined) background.engine = "onnx";
  if (Object.keys(background).length > 0) result.backgroundRemoval = background;
  return result;
}

/** Options of {@link loadServerConfig}. */
export interface LoadConfigOptions {
  /** Path of a JSON config file. */
  file?: string;
  /** Environment to read `PIXPORT_*` from. @default process.env */
  environment?: NodeJS.ProcessEnv;
  /** Highest-precedence values (command-line flags, tests). */
  overrides?: Record<string, unknown>;
}

/**
 * Loads and validates the configuration. Invalid values fail fast with `INVALID_CONFIGURATION`
 * naming every bad key.
 */
export async function loadServerConfig(options: LoadConfigOptions = {}): Promise<ServerConfig> {
  const environment = options.environment ?? process.env;
  const file = options.file ?? environment.PIXPORT_CONFIG;
  let fromFile: Record<string, unknown> = {};
  if (file !== undefined && file !== "") {
    try {
      fromFile = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
    } catch (error) {
      throw new ImagePipelineError(
        ErrorCodes.INVALID_CONFIGURATION,
        `Could not read the config file ${file}: ${(error as Error).message}`,
      );
    }
  }
  const env = fromEnvironment(environment);
  const merged: Record<string, unknown> = {
    ...fromFile,
    ...env,
    ...options.overrides,
    limits: {
      ...(fromFile.limits as object | undefined),
      ...(env.limits as object | undefined),
      ...(options.overrides?.limits as object | undefined),
    },
  };
  for (const section of [
    "s3",
    "backgroundRemoval",
    "ocr",
    "workQueue",
    "urlImport",
    "memoryBudget",
    "delivery",
    "pages",
  ] as const) {
    const parts = [fromFile[section], env[section], options.overrides?.[section]].filter(
      (part) => part !== undefined,
    );
    if (parts.length > 0) merged[section] = Object.assign({}, ...parts);
  }
  if (merged.s3 !== undefined && (merged.s3 as Record<string, unknown>).region === undefined) {
    const region = environment.AWS_REGION || environment.AWS_DEFAULT_REGION;
    if (region) (merged.s3 as Record<string, unknown>).region = region;
  }
  return resolveServerConfig(merged);
}

/**
 * The public base URL when none is configured: the address the server is bound to, so links and
 * published URLs point at the origin clients use (`localhost` when bound to every interface).
 * Set `publicBaseUrl` when clients reach the server through another name (a proxy, a container).
 */
export function defaultPublicBaseUrl(host: string, port: number): string {
  const everywhere = host === "0.0.0.0" || host === "::" || host === "[::]";
  const name = everywhere ? "localhost" : host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

/**
 * One config problem in the operator's words: `port must be an integer between 0 and 65535,
 * received "abc"`, naming the key and quoting what was given.
 */
function describeConfigIssue(issue: z.core.$ZodIssue): string {
  const key = issue.path.join(".") || "config";
  const received =
    "input" in issue && issue.input !== undefined ? `, received ${JSON.stringify(issue.input)}` : "";
  const bounds = NUMBER_BOUNDS[key];
  if (
    bounds !== undefined &&
    (issue.code === "invalid_type" || issue.code === "too_small" || issue.code === "too_big")
  ) {
    return `${key} must be an integer between ${bounds[0]} and ${bounds[1]}${received}`;
  }
  if (issue.code === "invalid_type") return `${key} must be a ${issue.expected}${received}`;
  if (issue.code === "invalid_value") {
    return `${key} must be one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}${received}`;
  }
  if (issue.code === "too_small" || issue.code === "too_big") {
    const side = issue.code === "too_small" ? "at least" : "at most";
    const limit = issue.code === "too_small" ? issue.minimum : issue.maximum;
    return `${key} must be ${side} ${String(limit)}${received}`;
  }
  return `${key}: ${issue.message}${received}`;
}

/** Integer keys whose range reads better in one phrase. */
const NUMBER_BOUNDS: Record<string, [number, number]> = { port: [0, 65535] };

/** Validates a config object and fills in derived defaults. */
export function resolveServerConfig(input: unknown): ServerConfig {
  const parsed = serverConfigSchema.safeParse(input, { reportInput: true });
  if (!parsed.success) {
    const problems = parsed.error.issues.map(describeConfigIssue);
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `Invalid configuration: ${problems.join("; ")}`,
    );
  }
  const config = parsed.data;
  if (config.storage === "s3" && config.s3 === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      'Invalid configuration: storage "s3" needs s3.bucket: set "s3": {"bucket": ...} in the config file or PIXPORT_S3_BUCKET.',
    );
  }
  if (config.metadata === "redis" && config.redisUrl === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      'Invalid configuration: metadata "redis" needs redisUrl: set "redisUrl" in the config file or PIXPORT_REDIS_URL.',
    );
  }
  const publicBaseUrl = (config.publicBaseUrl ?? defaultPublicBaseUrl(config.host, config.port)).replace(
    /\/+$/,
    "",
  );
  return {
    ...config,
    dataDir: path.resolve(config.dataDir),
    publicBaseUrl,
    publicStorageBaseUrl: (config.publicStorageBaseUrl ?? publicBaseUrl).replace(/\/+$/, ""),
  };
}

/**
 * The part of a server config that `@pixport/container` composes: every key of its schema, the
 * server's own settings (listener, logging, shutdown) left out.
 */
export function containerConfigOf(config: ServerConfig): PixportContainerConfig {
  const keys = Object.keys(pixportContainerConfigSchema.shape) as (keyof PixportContainerConfig)[];
  return Object.fromEntries(
    keys.filter((key) => config[key] !== undefined).map((key) => [key, config[key]]),
  ) as PixportContainerConfig;
}
