import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import {
  limitsSchema,
  memoryBudgetOptionsSchema,
  modelCircuitOptionsSchema,
  originNameSchema,
  policyOptionsSchema,
  urlImportOptionsSchema,
  workQueueOptionsSchema,
} from "@pixport/core/internal";
import { httpHandlerOptionsSchema } from "@pixport/http";
import { tesseractTextExtractorOptionsSchema } from "@pixport/ocr-tesseract";
import { modelRegistrySchema } from "@pixport/vision-openai/registry";
import { z } from "zod";
import { originConfigSchema } from "./origin-config.js";

const s3PrefixSchema = z
  .string()
  .regex(/^(?:[A-Za-z0-9._-]+\/)*$/, 'must be empty or end with "/", e.g. "pixport/"');

/** `s3` of the config (`storage: "s3"`): the private bucket, the public one and the client's settings. */
export const s3ConfigSchema = z
  .object({
    /** Private bucket: originals and derived images under `{prefix}images/`. */
    bucket: z.string().min(3),
    /** Region. @default "us-east-1" */
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
 * `backgroundRemoval` of the config: which `BackgroundRemover` answers `remove-background`.
 * `sharp` (default) is the embedded classical remover (`@pixport/background-sharp`); `onnx` runs a
 * segmentation model file you supply on `@pixport/background-onnx` (an optional package). The
 * `onnx` fields mirror that package's options.
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
 * `ocr` of the config: the embedded OCR extractor's tuning, `@pixport/ocr-tesseract`'s options of
 * the same names (its engine is `ocrEngine`): `workers` (half the cores, 1..4), `maxQueued`
 * (4 x workers), `timeoutMs` (60000), `idleMs` (30000) and `maxPagePixels` (16 MP, the most pixels
 * of a page tesseract is given).
 */
export const ocrConfigSchema = tesseractTextExtractorOptionsSchema
  .pick({ workers: true, maxQueued: true, timeoutMs: true, idleMs: true, maxPagePixels: true })
  .strict();

/**
 * `delivery` of the config: variant delivery
 * (`GET {publicStorageBaseUrl}/v/{signature}/{image_id}/{modifiers}.{ext}`). `signingKeys`: the
 * first signs, all verify (rotate by putting the new key first); without any, a random key is made
 * once and kept in `{dataDir}/delivery-signing-key` (in memory when there is no `dataDir`).
 */
export const deliveryConfigSchema = z
  .strictObject({
    signingKeys: z.array(z.string().min(16, "must be at least 16 characters")).default([]),
    presets: z.record(z.string().regex(/^[a-z0-9-]{1,32}$/), z.string().min(1).max(200)).default({}),
    allowUnsigned: z.boolean().default(false),
    /**
     * Quality when a variant URL has no `q_`: one number, or per format (`{ avif: 55 }`; formats
     * left out keep theirs). @default { jpeg: 80, webp: 82, avif: 62, png: 80, gif: 80, tiff: 80 }
     */
    defaultQuality: z
      .union([
        z.number().int().min(1).max(100),
        z.strictObject({
          jpeg: z.number().int().min(1).max(100).optional(),
          webp: z.number().int().min(1).max(100).optional(),
          avif: z.number().int().min(1).max(100).optional(),
          png: z.number().int().min(1).max(100).optional(),
          gif: z.number().int().min(1).max(100).optional(),
          tiff: z.number().int().min(1).max(100).optional(),
        }),
      ])
      .optional(),
    /** Bytes of variants kept on this node's store (least recently used out first). @default 256 MiB */
    cacheBytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024 * 1024),
    /**
     * Origins of origin-image delivery by name (`[a-z0-9-]{1,32}`): `{ type: "http", baseUrl }`,
     * `{ type: "s3", bucket, prefix }` or `{ type: "fs", directory }`, each with `account`,
     * `unsigned`, `ttlSeconds`, `timeoutMs` and `fetches`. See docs/delivery.md. @default {}
     */
    origins: z.record(originNameSchema, originConfigSchema).default({}),
    /** Bytes of fetched originals kept on this node's store (least recently used out first). @default 512 MiB */
    originalCacheBytes: z
      .number()
      .int()
      .positive()
      .default(512 * 1024 * 1024),
  })
  .default({
    signingKeys: [],
    presets: {},
    allowUnsigned: false,
    cacheBytes: 256 * 1024 * 1024,
    origins: {},
    originalCacheBytes: 512 * 1024 * 1024,
  });

const urlImportConfigSchema = urlImportOptionsSchema.omit({ storageBaseUrls: true }).strict();

/**
 * Everything {@link registerPixport} wires: where bytes, records and policy state live, the codec,
 * the engines (models, OCR, background remover), delivery, limits and the pipeline's and HTTP
 * handler's options. The prebuilt server's config is this schema plus its own listener, logging
 * and shutdown settings (`@pixport/server` extends it), so the defaults below are the server's.
 * Each adapter is still replaceable by registering its token (see `Tokens`).
 */
export const pixportContainerConfigSchema = z
  .object({
    /**
     * Where image bytes live: `memory` (this process, lost on exit), `fs` (files under `dataDir`)
     * or `s3` (a bucket configured under `s3`), for several stateless nodes. @default "memory"
     */
    storage: z.enum(["memory", "fs", "s3"]).default("memory"),
    /**
     * Where image records live: `memory`, `fs` (under `dataDir`) or `redis` (needs `redisUrl`).
     * @default "fs" with a `dataDir`, else "memory"
     */
    metadata: z.enum(["memory", "fs", "redis"]).optional(),
    /**
     * Directory of the file layout (see `pixportDataPaths`): blobs with `storage: "fs"`, records
     * with `metadata: "fs"`, and API keys, account flags and monthly quota counters unless
     * `redisUrl` is set. Without one (and without Redis) they stay in memory.
     */
    dataDir: z.string().min(1).optional(),
    /** The bucket(s) of `storage: "s3"`. */
    s3: s3ConfigSchema.optional(),
    /**
     * Redis URL (`redis://` or `rediss://`). When set, API keys, accounts, rate limits, quota
     * counters and the publish locks live in Redis, so several processes enforce one set of limits.
     */
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
      .optional(),
    /** Absolute URL clients use to reach the API (list links). @default the request's own origin */
    publicBaseUrl: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * Absolute base of published images' URLs (`{publicStorageBaseUrl}/images/{id}.{ext}`) and of
     * variant URLs. @default "http://localhost:3000"
     */
    publicStorageBaseUrl: z.url({ protocol: /^https?$/ }).default("http://localhost:3000"),
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
     * The handler's upload admission, as `httpHandlerOptionsSchema` states them: uploads in
     * progress at once (`maxConcurrentUploads`, default 32) and per account
     * (`maxConcurrentUploadsPerAccount`, default 8), the slowest accepted body
     * (`minUploadBytesPerSecond`, default 16 KiB/s, `0` off) and its grace (`uploadGraceMs`, 10 s).
     */
    ...httpHandlerOptionsSchema.pick({
      maxConcurrentUploads: true,
      maxConcurrentUploadsPerAccount: true,
      minUploadBytesPerSecond: true,
      uploadGraceMs: true,
      fairUploadBytesPerSecond: true,
      fairUploadAfterMs: true,
    }).shape,
    /**
     * Bytes of stored originals kept in memory, least recently used out first, each from a read
     * that follows a recent one (among the last 1,024) when there is room for it or the blobs read
     * since fit beside it (never on upload; see `createCachingBlobStore`); `0` disables the cache.
     * @default 64 MiB
     */
    blobCacheBytes: z
      .number()
      .int()
      .nonnegative()
      .default(64 * 1024 * 1024),
    /**
     * Create-from-URL (`POST /v1/images` with `{name, url}`): `enabled`, `allowedOrigins` (replaces
     * the contract's table), `additionalOrigins` (host patterns added to it), `originalStorageAlias`,
     * `maxRedirects` (0..3), `connectTimeoutMs`, `timeoutMs`. The own storage base is always
     * `publicStorageBaseUrl`.
     */
    urlImport: urlImportConfigSchema.default(urlImportConfigSchema.parse({})),
    /**
     * Image codec: `sharp` (libvips, native binaries, fast) or `jimp` (pure JavaScript plus WASM
     * WebP, for hosts that cannot load native binaries; several times slower). Only the chosen
     * package is imported. @default "sharp"
     */
    codec: z.enum(["sharp", "jimp"]).default("sharp"),
    /**
     * Engine of the embedded OCR (`extract-formatted-text` without an LLM extractor): `auto`
     * (`native` when the system's `tesseract` executable, 4 or later, runs; else `wasm`), `wasm`
     * (tesseract.js, nothing to install) or `native` (the executable, checked when the container is
     * composed: composition fails without it). @default "auto"
     */
    ocrEngine: z.enum(["auto", "wasm", "native"]).default("auto"),
    /** Tuning of the embedded OCR: see {@link ocrConfigSchema}. */
    ocr: ocrConfigSchema.default(ocrConfigSchema.parse({})),
    /**
     * Decoded pixels of stored images kept for their next transforms and variants, least recently
     * used out first (either codec); `0` turns it off. Outside `memoryBudget`, which bounds the
     * pixels of running jobs. @default 64 MiB
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
     * with the budget off, after each embedded OCR page (`@pixport/allocator`). @default true
     */
    releaseFreeMemory: z.boolean().default(true),
    /**
     * libvips' operation cache (sharp's `cache()`, process-wide; the sharp codec only). Off by
     * default: every request hands libvips a new buffer, so its cache keeps the pixels of past
     * requests and never answers one; decoded pixels worth keeping are `sourceCacheBytes`'.
     * `true` restores sharp's default (50 MB, 100 operations). @default false
     */
    vipsCache: z.boolean().default(false),
    /**
     * The service's policies: `testRequestsPerMinute` (10), `liveRequestsPerMinute` (100),
     * `trialImagesPerMonth` (25), `testRetentionDays` (90), `onStoreOutage` (`fail-closed`).
     */
    policies: policyOptionsSchema.strict().default(policyOptionsSchema.parse({})),
    /**
     * A PNG (with alpha), JPEG or WebP file to stamp on test-key images instead of the default
     * "TEST" mark. It is tiled over every image; requests cannot turn it off.
     */
    testWatermarkFile: z.string().min(1).optional(),
    /**
     * The model registry of imagine, visualize, classify and extract-formatted-text
     * (`@pixport/vision-openai`, an optional package): `registry` maps API model names to
     * `{baseUrl, model, apiKey | apiKeyEnv}` of OpenAI-compatible APIs; `defaults` picks the model
     * per operation; `timeoutMs` (30000) bounds every upstream call; `maxImageSide` (1024) caps
     * images sent to models. Without it those operations answer 501, except
     * extract-formatted-text, which runs on the embedded OCR.
     */
    models: modelRegistrySchema.optional(),
    /**
     * Circuit breaker of the model-backed operations, per model and node: `failureThreshold`
     * provider failures in a row (5) pause the model's calls for `cooldownMs` (30000) with a fast
     * 503 `MODEL_UNAVAILABLE`; `false` turns it off.
     */
    modelCircuit: modelCircuitOptionsSchema.default({ failureThreshold: 5, cooldownMs: 30_000 }),
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
    /** The remove-background engine: see {@link backgroundRemovalConfigSchema}. */
    backgroundRemoval: backgroundRemovalConfigSchema.default({ engine: "sharp", family: "isnet" }),
    /** Variant delivery: see {@link deliveryConfigSchema}. */
    delivery: deliveryConfigSchema,
  })
  .strict();

/** What {@link registerPixport} accepts (every field optional; see the schema for defaults). */
export type PixportContainerConfig = z.input<typeof pixportContainerConfigSchema>;
/** The config with its defaults applied. */
export type ResolvedPixportContainerConfig = z.output<typeof pixportContainerConfigSchema>;

/**
 * Parses a config with {@link pixportContainerConfigSchema} and checks the fields that depend on
 * each other, failing with `INVALID_CONFIGURATION` that names every bad path.
 */
export function parsePixportContainerConfig(config: unknown): ResolvedPixportContainerConfig {
  const settings = parseOptions(pixportContainerConfigSchema, config, "pixport container");
  const problems = [
    settings.storage === "fs" && settings.dataDir === undefined && 'storage "fs" needs dataDir',
    settings.metadata === "fs" && settings.dataDir === undefined && 'metadata "fs" needs dataDir',
    settings.storage === "s3" && settings.s3 === undefined && 'storage "s3" needs s3.bucket (the s3 options)',
    settings.metadata === "redis" && settings.redisUrl === undefined && 'metadata "redis" needs redisUrl',
  ].filter((problem): problem is string => typeof problem === "string");
  if (problems.length > 0) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `Invalid pixport container config: ${problems.join("; ")}.`,
    );
  }
  return settings;
}

/** Where image records live once the default is applied. */
export function metadataStoreOf(settings: ResolvedPixportContainerConfig): "memory" | "fs" | "redis" {
  return settings.metadata ?? (settings.dataDir === undefined ? "memory" : "fs");
}
