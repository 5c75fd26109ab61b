import { readFile } from "node:fs/promises";
import path from "node:path";
import {
  ErrorCodes,
  ImagePipelineError,
  limitsSchema,
  policyOptionsSchema,
  urlImportOptionsSchema,
} from "@pixport/core";
import { z } from "zod";

const urlImportServerSchema = urlImportOptionsSchema.omit({ storageBaseUrls: true }).strict();

/**
 * Configuration of the prebuilt server. Sources, later ones winning: defaults, the JSON config
 * file (`--config` or `PIXPORT_CONFIG`), `PIXPORT_*` environment variables, command-line flags.
 */
export const serverConfigSchema = z
  .object({
    /** TCP port. @default 3000 */
    port: z.number().int().min(0).max(65535).default(3000),
    /** Interface to listen on. @default "0.0.0.0" */
    host: z.string().min(1).default("0.0.0.0"),
    /** Directory holding blobs, metadata and keys. @default "./.pixport-data" */
    dataDir: z.string().min(1).default(".pixport-data"),
    /**
     * Absolute URL clients use to reach the API (list links). @default `http://localhost:{port}`
     */
    publicBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * Absolute base of published images' URLs (`{publicStorageBaseUrl}/images/{id}.{ext}`). The
     * server serves them itself under `/images/`; put a CDN in front and set this to its URL.
     * @default publicBaseUrl
     */
    publicStorageBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Upload, pixel and output limits (see `@pixport/core` limits). */
    limits: limitsSchema.default(limitsSchema.parse({})),
    /** jpeg/webp quality of re-encodes other than `convert`. @default 90 */
    encodeQuality: z.number().int().min(1).max(100).default(90),
    /** Name of the usage header. @default "X-Image-Processing-Usage" */
    usageHeaderName: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .default("X-Image-Processing-Usage"),
    /** Bytes of recently used private blobs kept in memory (0 disables the cache). @default 64 MiB */
    blobCacheBytes: z
      .number()
      .int()
      .nonnegative()
      .default(64 * 1024 * 1024),
    /** Express `trust proxy` setting (hops or `true`). @default false */
    trustProxy: z.union([z.boolean(), z.number().int().nonnegative()]).default(false),
    /** How long SIGTERM waits for in-flight requests, ms. @default 10000 */
    shutdownTimeoutMs: z.number().int().positive().default(10_000),
    /** Log requests and errors as JSON lines on stderr. @default true */
    log: z.boolean().default(true),
    /**
     * Create-from-URL (`POST /v1/images` with `{name, url}`): `enabled`, `allowedOrigins` (replaces
     * the contract's table), `additionalOrigins` (host patterns added to it), `originalStorageAlias`,
     * `maxRedirects` (0..3), `connectTimeoutMs`, `timeoutMs`. The own storage base is always
     * `publicStorageBaseUrl`. See the README section "Create from URL".
     */
    urlImport: urlImportServerSchema.default(urlImportServerSchema.parse({})),
    /**
     * Image codec: `sharp` (libvips, native binaries, fast) or `jimp` (pure JavaScript plus WASM
     * WebP, for hosts that cannot load native binaries; several times slower). @default "sharp"
     */
    codec: z.enum(["sharp", "jimp"]).default("sharp"),
    /**
     * The service's policies: `testRequestsPerMinute` (10), `liveRequestsPerMinute` (100),
     * `trialImagesPerMonth` (25), `testRetentionDays` (90), `onStoreOutage` (`fail-closed`).
     */
    policies: policyOptionsSchema.strict().default(policyOptionsSchema.parse({})),
    /**
     * Redis URL (`redis://` or `rediss://`). When set, API keys, accounts, rate limits and quota
     * counters live in Redis, so several server processes enforce one set of limits. Without it
     * they live in this process (keys in the data directory).
     */
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
      .optional(),
    /** How often the retention sweep runs, ms (it also runs at start); 0 disables it. @default 1 hour */
    retentionSweepIntervalMs: z
      .number()
      .int()
      .nonnegative()
      .default(60 * 60 * 1000),
    /**
     * A PNG (with alpha), JPEG or WebP file to stamp on test-key images instead of the default
     * "TEST" mark. It is tiled over every image; requests cannot turn it off.
     */
    testWatermarkFile: z.string().min(1).optional(),
  })
  .strict();

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
  PIXPORT_SHUTDOWN_TIMEOUT_MS: { key: "shutdownTimeoutMs", kind: "number" },
  PIXPORT_LOG: { key: "log", kind: "boolean" },
  PIXPORT_CODEC: { key: "codec", kind: "string" },
  PIXPORT_BLOB_CACHE_BYTES: { key: "blobCacheBytes", kind: "number" },
  PIXPORT_MAX_UPLOAD_BYTES: { key: "maxUploadBytes", kind: "limit" },
  PIXPORT_MAX_INPUT_PIXELS: { key: "maxInputPixels", kind: "limit" },
  PIXPORT_MAX_INPUT_SIDE: { key: "maxInputSide", kind: "limit" },
  PIXPORT_MAX_OUTPUT_SIDE: { key: "maxOutputSide", kind: "limit" },
};

function fromEnvironment(environment: NodeJS.ProcessEnv): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const limits: Record<string, unknown> = {};
  for (const [name, { key, kind }] of Object.entries(ENV)) {
    const raw = environment[name];
    if (raw === undefined || raw === "") continue;
    const value =
      kind === "string" ? raw : kind === "boolean" ? !/^(0|false|no|off)$/i.test(raw) : Number(raw);
    if (kind === "limit") limits[key] = value;
    else result[key] = value;
  }
  if (environment.PORT !== undefined && result.port === undefined) result.port = Number(environment.PORT);
  if (Object.keys(limits).length > 0) result.limits = limits;
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
  const merged = {
    ...fromFile,
    ...env,
    ...options.overrides,
    limits: {
      ...(fromFile.limits as object | undefined),
      ...(env.limits as object | undefined),
      ...(options.overrides?.limits as object | undefined),
    },
  };
  return resolveServerConfig(merged);
}

/** Validates a config object and fills in derived defaults. */
export function resolveServerConfig(input: unknown): ServerConfig {
  const parsed = serverConfigSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "config"}: ${issue.message}`,
    );
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `Invalid configuration: ${problems.join("; ")}`,
    );
  }
  const config = parsed.data;
  const publicBaseUrl = (config.publicBaseUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, "");
  return {
    ...config,
    dataDir: path.resolve(config.dataDir),
    publicBaseUrl,
    publicStorageBaseUrl: (config.publicStorageBaseUrl ?? publicBaseUrl).replace(/\/+$/, ""),
  };
}
