import { readFile } from "node:fs/promises";
import path from "node:path";
import { type PixportContainerConfig, pixportContainerConfigSchema } from "@pixport/container";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";
import { fromEnvironment } from "./config-env.js";
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
   * configured under `s3`), for several stateless nodes. See docs/scale-out.md. @default "fs"
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
