import { readFile } from "node:fs/promises";
import path from "node:path";
import {
  ErrorCodes,
  ImagePipelineError,
  limitsSchema,
  memoryBudgetOptionsSchema,
  modelCircuitOptionsSchema,
  policyOptionsSchema,
  urlImportOptionsSchema,
  workQueueOptionsSchema,
} from "@pixport/core";
import { tesseractTextExtractorOptionsSchema } from "@pixport/ocr-tesseract";
import { modelRegistrySchema } from "@pixport/vision-openai/registry";
import { z } from "zod";
import { LOG_LEVELS } from "./observability.js";

const urlImportServerSchema = urlImportOptionsSchema.omit({ storageBaseUrls: true }).strict();

const s3PrefixSchema = z
  .string()
  .regex(/^(?:[A-Za-z0-9._-]+\/)*$/, 'must be empty or end with "/", e.g. "pixport/"');

/** `s3` options of the server config (`storage: "s3"`). */
export const s3ConfigSchema = z
  .object({
    /** Private bucket: originals and derived images under `{prefix}images/`. */
    bucket: z.string().min(3),
    /** Region. @default AWS_REGION or AWS_DEFAULT_REGION, else "us-east-1" */
    region: z.string().min(1).optional(),
    /** Endpoint of an S3-compatible server (MinIO, R2, s3rver); absent for AWS. */
    endpoint: z.url({ protocol: /^https?$/ }).optional(),
    /** Path-style URLs (`{endpoint}/{bucket}/{key}`), needed by most S3-compatible servers. @default false */
    forcePathStyle: z.boolean().default(false),
    /** Access key; absent: the AWS SDK's default chain (AWS_ACCESS_KEY_ID, profiles, IAM roles). */
    accessKeyId: z.string().min(1).optional(),
    /** Secret of `accessKeyId`. */
    secretAccessKey: z.string().min(1).optional(),
    /** Key prefix in the private bucket. @default "" */
    prefix: s3PrefixSchema.default(""),
    /** Bucket of published copies (`{publicPrefix}images/{id}.{ext}`). @default bucket */
    publicBucket: z.string().min(3).optional(),
    /** Key prefix of published copies. @default "public/" */
    publicPrefix: s3PrefixSchema.default("public/"),
    /**
     * The S3 client's `requestChecksumCalculation` and `responseChecksumValidation`. `WHEN_REQUIRED`
     * works with every S3-compatible server (s3rver, older MinIO); AWS accepts both.
     * @default "WHEN_REQUIRED"
     */
    checksums: z.enum(["WHEN_REQUIRED", "WHEN_SUPPORTED"]).default("WHEN_REQUIRED"),
  })
  .strict()
  .refine((s3) => (s3.accessKeyId === undefined) === (s3.secretAccessKey === undefined), {
    message: "set both accessKeyId and secretAccessKey, or neither (to use the AWS SDK's default chain)",
  });

const rgbSchema = z.tuple([z.number(), z.number(), z.number()]);

/**
 * `backgroundRemoval` of the server config: which {@link BackgroundRemover} answers
 * `remove-background`. `sharp` (default) is the embedded classical remover; `onnx` runs a
 * segmentation model file you supply on `@pixport/background-onnx` (an optional package: install
 * it next to the server). The `onnx` fields mirror that package's options.
 */
export const backgroundRemovalConfigSchema = z
  .object({
    /** @default "sharp" */
    engine: z.enum(["sharp", "onnx"]).default("sharp"),
    /** Path of the `.onnx` model file (required for `engine: "onnx"`). */
    model: z.string().min(1).optional(),
    /** Pre-/post-processing family of the model. @default "isnet" */
    family: z.enum(["isnet", "u2net", "birefnet"]).default("isnet"),
    inputWidth: z.number().int().min(8).max(4096).optional(),
    inputHeight: z.number().int().min(8).max(4096).optional(),
    mean: rgbSchema.optional(),
    std: rgbSchema.optional(),
    output: z.enum(["probability", "logits"]).optional(),
    normalize: z.enum(["minmax", "none"]).optional(),
    inputName: z.string().min(1).optional(),
    outputName: z.string().min(1).optional(),
    threads: z.number().int().min(1).max(256).optional(),
    concurrency: z.number().int().min(1).max(64).optional(),
    /** Deadline of one removal, queueing included. @default 30000 */
    timeoutMs: z.number().int().min(100).max(600_000).optional(),
  })
  .strict()
  .refine((value) => value.engine !== "onnx" || value.model !== undefined, {
    message: 'engine "onnx" needs model (the path of an .onnx segmentation model)',
    path: ["model"],
  });

/**
 * `ocr` of the server config: the embedded OCR extractor's tuning, `@pixport/ocr-tesseract`'s
 * options of the same names (its engine is `ocrEngine`): `workers` (half the cores, 1..4),
 * `maxQueued` (4 x workers), `timeoutMs` (60000), `idleMs` (30000) and `maxPagePixels` (16 MP, the
 * most pixels of a page tesseract is given).
 */
export const ocrConfigSchema = tesseractTextExtractorOptionsSchema
  .pick({ workers: true, maxQueued: true, timeoutMs: true, idleMs: true, maxPagePixels: true })
  .strict();

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
    /** Upload, pixel and output limits (see `@pixport/core` limits). */
    limits: limitsSchema.default(limitsSchema.parse({})),
    /** jpeg/webp quality of re-encodes other than `convert`. @default 90 */
    encodeQuality: z.number().int().min(1).max(100).default(90),
    /** Name of the usage header. @default "X-Image-Processing-Usage" */
    usageHeaderName: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .default("X-Image-Processing-Usage"),
    /**
     * Uploads in progress at once (reading the body to the answer); beyond, 503 `OVERLOADED`
     * unread, so upload bodies never hold more than this x `limits.maxUploadBytes`. @default 32
     */
    maxConcurrentUploads: z.number().int().min(1).max(100_000).default(32),
    /** Uploads in progress at once for one account (all its keys). @default 8 */
    maxConcurrentUploadsPerAccount: z.number().int().min(1).max(100_000).default(8),
    /**
     * Slowest accepted upload body (average bytes per second since it began, checked after
     * `uploadGraceMs`); slower ones are cut off with 408. `0` disables. @default 16384
     */
    minUploadBytesPerSecond: z
      .number()
      .int()
      .nonnegative()
      .default(16 * 1024),
    /** Time an upload body may take before its rate is checked, ms. @default 10000 */
    uploadGraceMs: z.number().int().min(100).max(600_000).default(10_000),
    /**
     * Bytes of stored originals kept in memory, least recently used out first, each from its second
     * read among the last 1,024 (never on upload; see `createCachingBlobStore`); `0` disables the
     * cache. @default 64 MiB
     */
    blobCacheBytes: z
      .number()
      .int()
      .nonnegative()
      .default(64 * 1024 * 1024),
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
     * Engine of the embedded OCR (`extract-formatted-text` without an LLM extractor): `auto`
     * (`native` when the system's `tesseract` executable, 4 or later, runs; else `wasm`; the choice
     * is named in the start line), `wasm` (tesseract.js, nothing to install) or `native` (the
     * executable, checked at start: the server refuses to start without it; one resident process
     * per worker that keeps the model loaded between pages and exits after 30 s idle). See the README section
     * on OCR. @default "auto"
     */
    ocrEngine: z.enum(["auto", "wasm", "native"]).default("auto"),
    /** Tuning of the embedded OCR: see {@link ocrConfigSchema}. */
    ocr: ocrConfigSchema.default(ocrConfigSchema.parse({})),
    /**
     * Decoded pixels of stored images kept for their next transforms and variants, per node, least
     * recently used out first (either codec; see the README section "Memory budget"); `0` turns it
     * off. Outside `memoryBudget`, which bounds the pixels of running jobs. @default 64 MiB
     */
    sourceCacheBytes: z
      .number()
      .int()
      .min(0)
      .default(64 * 1024 * 1024),
    /**
     * Gives the allocator's free memory (glibc's or tcmalloc's) back to the system once the memory
     * budget has stayed empty for `memoryBudget.releaseAfterIdleMs` after a job of
     * `releaseAfterBytes` or more (at once after such a job of `releaseAfterJobMs` or longer);
     * with the budget off, after each embedded OCR page
     * (`@pixport/allocator`). Env `PIXPORT_RELEASE_FREE_MEMORY` (`false`/`off`/`0` turns it off).
     * @default true
     */
    releaseFreeMemory: z.boolean().default(true),
    /**
     * libvips' operation cache (sharp's `cache()`, process-wide; the sharp codec only). Off by
     * default: the server hands libvips a new buffer on every request, so its cache (sharp's
     * default: 50 MB, 100 operations) keeps the pixels of past requests and never answers one;
     * decoded pixels worth keeping are `sourceCacheBytes`'. `true` restores sharp's default. Env
     * `PIXPORT_VIPS_CACHE`. @default false
     */
    vipsCache: z.boolean().default(false),
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
    /**
     * The model registry of imagine, visualize, classify and extract-formatted-text
     * (`@pixport/vision-openai`): `registry` maps API model names (`uform-gen`, `llava`, `gemini`,
     * `sdxl`, `flux`, ...) to `{baseUrl, model, apiKey | apiKeyEnv}` of OpenAI-compatible APIs;
     * `defaults` picks the model per operation; `timeoutMs` (30000) bounds every upstream call;
     * `maxImageSide` (1024) caps images sent to models. Without it those operations answer 501.
     * See the README section "Model-backed operations".
     */
    models: modelRegistrySchema.optional(),
    /**
     * Circuit breaker of the model-backed operations, per model and node: `failureThreshold`
     * provider failures in a row (5) pause the model's calls for `cooldownMs` (30000) with a fast
     * 503 `MODEL_UNAVAILABLE`; `false` turns it off.
     */
    modelCircuit: modelCircuitOptionsSchema.default({ failureThreshold: 5, cooldownMs: 30_000 }),
    /**
     * Where image bytes live: `fs` (the data directory) or `s3` (an S3 or S3-compatible bucket,
     * configured under `s3`), for several stateless nodes. @default "fs"
     */
    storage: z.enum(["fs", "s3"]).default("fs"),
    /**
     * Where image metadata lives: `fs` (the data directory) or `redis` (needs `redisUrl`), for
     * several stateless nodes. @default "fs"
     */
    metadata: z.enum(["fs", "redis"]).default("fs"),
    /** The bucket(s) of `storage: "s3"`; see the README section "Scale-out: S3 and Redis". */
    s3: s3ConfigSchema.optional(),
    /**
     * Back-pressure per node: image jobs (creates, transforms, remove-background) running
     * (`maxActive`, 8) and waiting (`maxQueued`, 32) at once, and the longest wait (`maxWaitMs`,
     * 10000); beyond, 503 `OVERLOADED` with Retry-After.
     */
    workQueue: workQueueOptionsSchema.default(workQueueOptionsSchema.parse({})),
    /**
     * Pixel memory of the image jobs running at once (estimated per job before decoding); beyond,
     * jobs wait up to `maxWaitMs` then answer 503; a job bigger than the whole budget is a 422.
     * `false` turns it off. @default { maxBytes: 1 GiB (for a 2 GB host), maxWaitMs: 10000 }
     */
    memoryBudget: z
      .union([memoryBudgetOptionsSchema, z.literal(false)])
      .default(memoryBudgetOptionsSchema.parse({})),
    /** The remove-background engine; see the README section "Offline image intelligence". */
    backgroundRemoval: backgroundRemovalConfigSchema.default({ engine: "sharp", family: "isnet" }),
    /**
     * Variant delivery (`GET {publicStorageBaseUrl}/v/{signature}/{image_id}/{modifiers}.{ext}`).
     * `signingKeys`: the first signs, all verify (rotate by putting the new key first); without
     * any, a random key is made at first start and kept in `{dataDir}/delivery-signing-key`.
     */
    delivery: z
      .strictObject({
        signingKeys: z.array(z.string().min(16, "must be at least 16 characters")).default([]),
        presets: z.record(z.string().regex(/^[a-z0-9-]{1,32}$/), z.string().min(1).max(200)).default({}),
        allowUnsigned: z.boolean().default(false),
        /** Bytes of variants kept on this node's store (least recently used out first). @default 256 MiB */
        cacheBytes: z
          .number()
          .int()
          .positive()
          .default(256 * 1024 * 1024),
      })
      .default({ signingKeys: [], presets: {}, allowUnsigned: false, cacheBytes: 256 * 1024 * 1024 }),
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
