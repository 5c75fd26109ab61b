import { readFile } from "node:fs/promises";
import path from "node:path";
import { createAllocatorReleaser } from "@pixport/allocator";
import {
  container,
  type DependencyContainer,
  provide,
  registerPixport,
  resolve,
  type Token,
  Tokens,
} from "@pixport/container";
import {
  type AccountStore,
  type BackgroundRemover,
  type BlobStore,
  type Clock,
  createBlobStorePublisher,
  createCachingBlobStore,
  ErrorCodes,
  type ImageCodec,
  type ImageFetcher,
  type ImagePipeline,
  ImagePipelineError,
  type ImagePublisher,
  type ImageRepository,
  type KeyStore,
  type LockService,
  type Logger,
  type ModelPorts,
  type QuotaStore,
  type RateLimiter,
} from "@pixport/core";
import { createNodeImageFetcher } from "@pixport/fetch-node";
import type { RequestEvent } from "@pixport/http";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import { createThumbhashPlaceholders } from "@pixport/placeholders";
import {
  createFsAccountStore,
  createFsBlobStore,
  createFsImageRepository,
  createFsKeyStore,
  createFsQuotaStore,
} from "@pixport/storage-fs";
import type { Redis } from "ioredis";
import type { ServerConfig } from "./config.js";
import { createNodeVariantSigner } from "./node-signer.js";
import { type Instrumentation, instrumentCodec, instrumentModels } from "./observability.js";

/** Data directory layout of the embedded deployment. */
export function dataPaths(dataDir: string) {
  return {
    blobs: path.join(dataDir, "blobs"),
    publicBlobs: path.join(dataDir, "public"),
    images: path.join(dataDir, "images"),
    keys: path.join(dataDir, "keys"),
    accounts: path.join(dataDir, "accounts"),
    quota: path.join(dataDir, "quota"),
  };
}

/** Programmatic extras that a config file cannot express. */
export interface RuntimeOptions {
  /**
   * A container whose registrations replace the server's adapters (any token of
   * `@pixport/container`, e.g. `Tokens.BlobStore`); the server registers its own adapters only for
   * tokens it does not hold. @default a child of tsyringe's root container
   */
  container?: DependencyContainer;
  /**
   * The fetcher of create-from-URL. Tests inject one with a test resolver and CA.
   * @default createNodeImageFetcher() (system DNS and roots, public addresses only, port 443)
   */
  imageFetcher?: ImageFetcher;
  /** Time source of the policies and records (tests move it by hand). @default the system clock */
  clock?: Clock;
  /** Called once per answered API request (the server's access log and metrics). */
  onRequestDone?: (event: RequestEvent) => void;
  /** Receives codec job times and model call outcomes (the server's metrics). */
  instrumentation?: () => Instrumentation;
}

/** Everything a deployment runs on, built from its config; shared by `serve` and the CLI. */
export interface PixportRuntime {
  pipeline: ImagePipeline;
  /** The container the deployment was composed in (resolve any port from it). */
  container: DependencyContainer;
  keys: KeyStore;
  accounts: AccountStore;
  /** Monthly usage counters (in the data directory on the embedded defaults, else Redis). */
  quota: QuotaStore;
  /** Where published copies live (served under `/images/`). */
  publicStore: BlobStore;
  /**
   * The engine of the embedded OCR the runtime built (what `ocrEngine: "auto"` chose); undefined
   * when extract-formatted-text goes to an LLM or to models passed in.
   */
  ocrEngine?: "wasm" | "native";
  /** Releases connections (Redis). */
  close(): Promise<void>;
}

/**
 * Builds the deployment: the configured codec, files under the data directory, and either
 * in-process policy state (keys in the data directory) or Redis for keys, accounts, rate limits and
 * quota (`redisUrl`), so several processes share one set of limits.
 *
 * @example
 * ```ts
 * const runtime = await createPixportRuntime(resolveServerConfig({ dataDir: "./data" }), logger);
 * console.log(await runtime.pipeline.usage("default"));
 * await runtime.close();
 * ```
 */
export async function createPixportRuntime(
  config: ServerConfig,
  logger: Logger,
  options: RuntimeOptions = {},
): Promise<PixportRuntime> {
  const paths = dataPaths(config.dataDir);
  const storage = config.storage === "s3" ? await createS3Storage(config) : createFsStorage(paths);
  const privateBlobs = storage.privateBlobs;
  // Hot sources (one upload, many derived sizes) are read from disk twice, then from memory; an
  // image uploaded and read once (an OCR page) is never kept. Keys are write-once.
  const blobStore =
    config.blobCacheBytes > 0
      ? createCachingBlobStore(privateBlobs, { maxBytes: config.blobCacheBytes })
      : privateBlobs;
  const publicStore = storage.publicStore;
  const fsImages = config.metadata === "fs" ? createFsImageRepository({ root: paths.images }) : undefined;
  const fsKeys = createFsKeyStore({ root: paths.keys });
  // Temp files left by a crash are invisible to reads; remove them once at start.
  await Promise.all([
    storage.sweepTemporaryFiles(),
    fsKeys.sweepTemporaryFiles(),
    fsImages?.sweepTemporaryFiles(),
  ]);

  let redis: Redis | undefined;
  const fsQuota = createFsQuotaStore({ root: paths.quota });
  // Embedded default: keys, account flags and the monthly quota counters in the data directory
  // (durable across restarts and kill -9, and shared with the CLI, another process, which changes
  // flags and reads usage while the server runs); per-minute rate-limit counters in this process.
  let policyState: {
    keys: KeyStore;
    accounts: AccountStore;
    rateLimiter?: RateLimiter;
    quota?: QuotaStore;
    locks?: LockService;
  } = {
    keys: fsKeys,
    accounts: createFsAccountStore({ root: paths.accounts }),
    quota: fsQuota,
  };
  // The Redis adapters (and ioredis) are loaded only when configured: on the embedded defaults they
  // would only cost memory (ioredis alone: 8-10 MB of RSS, imported after the server's other modules).
  const redisAdapters = config.redisUrl === undefined ? undefined : await import("@pixport/redis");
  if (config.redisUrl !== undefined && redisAdapters !== undefined) {
    const {
      createRedisAccountStore,
      createRedisKeyStore,
      createRedisLockService,
      createRedisQuotaStore,
      createRedisRateLimiter,
    } = redisAdapters;
    const { Redis } = await import("ioredis");
    // Fail fast during an outage instead of queueing commands: the outage policy answers 503.
    redis = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    redis.on("error", (error: Error) => logger.warn?.("redis connection error", { error: error.message }));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`Could not connect to Redis at ${config.redisUrl}`)),
        10_000,
      );
      redis?.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const shared = { client: redis };
    policyState = {
      keys: createRedisKeyStore(shared),
      accounts: createRedisAccountStore(shared),
      rateLimiter: createRedisRateLimiter(shared),
      quota: createRedisQuotaStore(shared),
      // Publish, unpublish and delete of one image are serialised across every node.
      locks: createRedisLockService(shared),
    };
  }
  // `metadata: "redis"` requires `redisUrl` (checked when the config is resolved).
  const images: ImageRepository =
    fsImages ??
    (redisAdapters as typeof import("@pixport/redis")).createRedisImageRepository({ client: redis as Redis });

  // Composition goes through the container: every adapter the config asks for is registered under
  // its token unless the caller's container already has one (`options.container`), and the
  // pipeline is resolved from whatever the tokens hold. Costly defaults (codec workers, the
  // remover's model, the OCR workers) are only built when not replaced.
  const scope = options.container ?? container.createChildContainer();
  const give = <T>(token: Token<T>, make: () => T) => provide(scope, token, make);
  const owned: { close(): Promise<void> }[] = [];
  let ocrEngine: "wasm" | "native" | undefined;
  if (!scope.isRegistered(Tokens.Codec, true)) {
    const created = await createCodec(config);
    const codec =
      options.instrumentation === undefined ? created : instrumentCodec(created, options.instrumentation);
    owned.push({ close: async () => (codec as { close?(): Promise<void> }).close?.() });
    give(Tokens.Codec, () => codec);
  }
  give(Tokens.BlobStore, () => blobStore);
  give(Tokens.PublicBlobStore, () => publicStore);
  give(Tokens.ImageRepository, () => images);
  give(Tokens.KeyStore, () => policyState.keys);
  give(Tokens.AccountStore, () => policyState.accounts);
  if (policyState.quota !== undefined) give(Tokens.QuotaStore, () => policyState.quota as QuotaStore);
  if (policyState.locks !== undefined) give(Tokens.Locks, () => policyState.locks as LockService);
  if (policyState.rateLimiter !== undefined)
    give(Tokens.RateLimiter, () => policyState.rateLimiter as RateLimiter);
  // The publisher copies from whichever private store the container holds.
  give(Tokens.Publisher, () =>
    storage.publisher(resolve(scope, Tokens.BlobStore), config.publicStorageBaseUrl),
  );
  give(Tokens.Logger, () => logger);
  if (options.clock !== undefined) give(Tokens.Clock, () => options.clock as Clock);
  // URL import: own-storage URLs are read from the public store; others go through the SSRF-safe
  // fetcher (public addresses only, pinned connections, manual redirects).
  give(Tokens.Fetcher, () => options.imageFetcher ?? createNodeImageFetcher());
  // The allocator's free memory goes back to the system when the memory budget drains after a
  // large job (an upload or OCR page of megapixels): see `memoryBudget.releaseAfterBytes`.
  if (config.releaseFreeMemory && !scope.isRegistered(Tokens.MemoryReleaser, true))
    give(Tokens.MemoryReleaser, () => createAllocatorReleaser());
  if (!scope.isRegistered(Tokens.Models, true)) {
    // Model-backed operations: OpenAI-compatible providers from the `models` registry;
    // extract-formatted-text falls back to the embedded offline tesseract extractor, whose
    // workers start on the first extraction only.
    // The openai SDK (about 8 MB resident) is loaded only by a server with a model registry.
    const remote =
      config.models === undefined
        ? undefined
        : (await import("@pixport/vision-openai")).createOpenAiModels({ registry: config.models, logger });
    const embeddedExtractor =
      config.models?.defaults.extract === undefined
        ? createTesseractTextExtractor({
            ...config.ocr,
            engine: config.ocrEngine,
            // The launcher chooses the allocator and its settings (bin/with-allocator): tcmalloc on
            // the default start, two glibc arenas on the lean one. A server on glibc otherwise
            // keeps glibc's arenas: two cost the resize load 4-10 % of its throughput.
            mallocArenas: 0,
            // With a memory budget the pipeline releases once the node is idle (the pages are jobs
            // of the budget); without one, the extractor releases after each page itself.
            memoryReleaser:
              config.memoryBudget === false && scope.isRegistered(Tokens.MemoryReleaser, true)
                ? resolve(scope, Tokens.MemoryReleaser)
                : false,
          })
        : undefined;
    if (embeddedExtractor !== undefined) {
      owned.push(embeddedExtractor);
      ocrEngine = embeddedExtractor.engine;
    }
    const plain: ModelPorts = { ...remote, textExtractor: embeddedExtractor ?? remote?.textExtractor };
    const models =
      options.instrumentation === undefined ? plain : instrumentModels(plain, options.instrumentation);
    give(Tokens.Models, () => models);
  }
  // ThumbHash and BlurHash of every new image, for GET /v1/images/{id}/metadata.
  if (!scope.isRegistered(Tokens.Placeholders, true))
    give(Tokens.Placeholders, () => createThumbhashPlaceholders());
  if (!scope.isRegistered(Tokens.BackgroundRemover, true)) {
    const backgroundRemover = await createBackgroundRemover(config, logger);
    if (backgroundRemover !== undefined) {
      owned.push({ close: async () => backgroundRemover.close?.() });
      give(Tokens.BackgroundRemover, () => backgroundRemover);
    }
  }
  const testWatermark =
    config.testWatermarkFile === undefined
      ? undefined
      : await loadMark(resolve(scope, Tokens.Codec), config.testWatermarkFile);
  give(Tokens.PipelineOptions, () => ({
    limits: config.limits,
    encodeQuality: config.encodeQuality,
    policies: config.policies,
    ...(testWatermark === undefined ? {} : { testWatermark }),
    urlImport: { ...config.urlImport, storageBaseUrls: [config.publicStorageBaseUrl] },
    workQueue: config.workQueue,
    ...(config.memoryBudget === false ? {} : { memoryBudget: config.memoryBudget }),
    modelCircuit: config.modelCircuit,
    delivery: {
      baseUrl: config.publicStorageBaseUrl,
      presets: config.delivery.presets,
      allowUnsigned: config.delivery.allowUnsigned,
    },
    variantCacheBytes: config.delivery.cacheBytes,
    backgroundFacts: true,
  }));
  if (!scope.isRegistered(Tokens.VariantSigner, true)) {
    const keys =
      config.delivery.signingKeys.length > 0
        ? config.delivery.signingKeys
        : [await localSigningKey(config.dataDir)];
    give(Tokens.VariantSigner, () => createNodeVariantSigner(keys));
  }
  give(Tokens.HttpOptions, () => ({
    publicBaseUrl: config.publicBaseUrl,
    usageHeaderName: config.usageHeaderName,
    maxConcurrentUploads: config.maxConcurrentUploads,
    maxConcurrentUploadsPerAccount: config.maxConcurrentUploadsPerAccount,
    minUploadBytesPerSecond: config.minUploadBytesPerSecond,
    uploadGraceMs: config.uploadGraceMs,
    ...(options.onRequestDone === undefined ? {} : { onRequestDone: options.onRequestDone }),
  }));
  // Whatever is still missing (clock, ids, the rate limiter) gets pixport's defaults.
  await registerPixport(scope, { codec: config.codec, publicStorageBaseUrl: config.publicStorageBaseUrl });
  const pipeline = resolve(scope, Tokens.Pipeline);
  return {
    pipeline,
    container: scope,
    keys: resolve(scope, Tokens.KeyStore),
    accounts: resolve(scope, Tokens.AccountStore),
    quota: resolve(scope, Tokens.QuotaStore),
    publicStore: resolve(scope, Tokens.PublicBlobStore),
    ...(ocrEngine === undefined ? {} : { ocrEngine }),
    async close() {
      // Background work (image facts) finishes its current image and stops before the stores close.
      await pipeline.stopBackgroundWork();
      await Promise.all(owned.map((resource) => resource.close()));
      // Uncapped usage counted in the last moments is written before the process goes.
      await fsQuota
        .flush()
        .catch((error: unknown) =>
          logger.warn?.("could not write the last quota counts", { error: String(error) }),
        );
      if (redis !== undefined) await redis.quit().catch(() => redis?.disconnect());
      storage.close();
    },
  };
}

/** Where bytes live: private blobs, public copies and how to publish from one to the other. */
interface Storage {
  privateBlobs: BlobStore;
  /** Served by the server under `/images/` and read by URL import of own-storage URLs. */
  publicStore: BlobStore;
  publisher(source: BlobStore, publicBaseUrl: string): ImagePublisher;
  sweepTemporaryFiles(): Promise<void>;
  close(): void;
}

function createFsStorage(paths: ReturnType<typeof dataPaths>): Storage {
  const privateBlobs = createFsBlobStore({ root: paths.blobs });
  const publicStore = createFsBlobStore({ root: paths.publicBlobs });
  return {
    privateBlobs,
    publicStore,
    publisher: (source, publicBaseUrl) =>
      createBlobStorePublisher({ source, target: publicStore, publicBaseUrl }),
    async sweepTemporaryFiles() {
      await Promise.all([privateBlobs.sweepTemporaryFiles(), publicStore.sweepTemporaryFiles()]);
    },
    close() {},
  };
}

/**
 * `storage: "s3"`: private blobs at `{prefix}{key}` in `bucket`, public copies at
 * `{publicPrefix}images/{id}.{ext}` in `publicBucket` (default: the same bucket). Publishing is a
 * server-side CopyObject. The SDK is imported only when S3 is chosen.
 */
async function createS3Storage(config: ServerConfig): Promise<Storage> {
  const s3 = config.s3;
  if (s3 === undefined) throw new TypeError('storage "s3" needs the s3 options');
  const [{ S3Client }, { createS3BlobStore, createS3Publisher }] = await Promise.all([
    import("@aws-sdk/client-s3"),
    import("@pixport/storage-s3"),
  ]);
  const client = new S3Client({
    region: s3.region ?? "us-east-1",
    ...(s3.endpoint === undefined ? {} : { endpoint: s3.endpoint }),
    forcePathStyle: s3.forcePathStyle,
    ...(s3.accessKeyId === undefined || s3.secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }),
    requestChecksumCalculation: s3.checksums,
    responseChecksumValidation: s3.checksums,
  });
  const source = { bucket: s3.bucket, prefix: s3.prefix };
  const target = { bucket: s3.publicBucket ?? s3.bucket, prefix: s3.publicPrefix };
  return {
    privateBlobs: createS3BlobStore({ client, ...source }),
    publicStore: createS3BlobStore({ client, ...target }),
    publisher: (_source, publicBaseUrl) => createS3Publisher({ client, source, target, publicBaseUrl }),
    async sweepTemporaryFiles() {
      // S3 PUTs are atomic: there are no temp objects to sweep.
    },
    close() {
      client.destroy();
    },
  };
}

/**
 * The configured codec. Each codec package is imported only when chosen, so `codec: "jimp"` runs on
 * hosts where sharp's native binaries are missing or cannot load.
 */
async function createCodec(config: ServerConfig): Promise<ImageCodec> {
  const maxInputPixels = config.limits.maxInputPixels;
  if (config.codec === "jimp") {
    const { createJimpCodec } = await import("@pixport/codec-jimp");
    return createJimpCodec({ maxInputPixels, sourceCacheBytes: config.sourceCacheBytes });
  }
  const { createSharpCodec } = await import("@pixport/codec-sharp");
  return createSharpCodec({
    maxInputPixels,
    sourceCacheBytes: config.sourceCacheBytes,
    cache: config.vipsCache,
  });
}

/**
 * The remove-background engine. `onnx`: the configured model on `@pixport/background-onnx` (an
 * optional package, imported only when chosen; the model is loaded and checked at start, so a bad
 * path or model fails the start). `sharp` (default): the embedded classical remover
 * (`@pixport/background-sharp`); with `codec: "jimp"` on a host where sharp cannot load,
 * remove-background answers 501.
 */
async function createBackgroundRemover(
  config: ServerConfig,
  logger: Logger,
): Promise<(BackgroundRemover & { close?(): Promise<void> }) | undefined> {
  const { engine, model, ...onnxOptions } = config.backgroundRemoval;
  if (engine === "onnx" && model !== undefined) {
    let onnx: typeof import("@pixport/background-onnx");
    try {
      onnx = await import("@pixport/background-onnx");
    } catch (error) {
      throw new ImagePipelineError(
        ErrorCodes.INVALID_CONFIGURATION,
        `backgroundRemoval.engine "onnx" needs the optional package @pixport/background-onnx: install it next to @pixport/server (${(error as Error).message}).`,
        { cause: error },
      );
    }
    return onnx.createOnnxBackgroundRemover({
      ...onnxOptions,
      model,
      maxInputPixels: config.limits.maxInputPixels,
    });
  }
  try {
    const { createSharpBackgroundRemover } = await import("@pixport/background-sharp");
    return createSharpBackgroundRemover({ maxInputPixels: config.limits.maxInputPixels });
  } catch (error) {
    if (config.codec !== "jimp") throw error;
    logger.warn?.("sharp could not load: remove-background is not available", { error: String(error) });
    return undefined;
  }
}

/** Reads a custom test mark and its size (header only). */
async function loadMark(codec: ImageCodec, file: string) {
  const image = new Uint8Array(await readFile(file));
  const header = await codec.probe(image);
  if (header === null) throw new TypeError(`testWatermarkFile ${file} is not a png, jpeg or webp image`);
  return { image, width: header.width, height: header.height };
}

/**
 * The delivery signing key of a server configured without one: made once (32 random bytes,
 * base64url) and kept in `{dataDir}/delivery-signing-key` (mode 0600), so variant URLs survive
 * restarts. Several nodes must share configured keys instead.
 */
async function localSigningKey(dataDir: string): Promise<string> {
  const { readFile, writeFile, mkdir, link, rename, unlink } = await import("node:fs/promises");
  const { randomBytes } = await import("node:crypto");
  const path = `${dataDir}/delivery-signing-key`;
  const read = async () => {
    try {
      return (await readFile(path, "utf8")).trim();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
      throw error;
    }
  };
  const existing = await read();
  if (existing.length >= 16) return existing;
  await mkdir(dataDir, { recursive: true });
  // The key goes into a temp file first and is then linked to its name, so the file never exists
  // without its key: another process starting at the same moment reads a complete key or none
  // (creating the file and then writing into it let a second process read it empty).
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}~tmp`;
  await writeFile(temporary, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
  try {
    if (existing.length > 0) {
      // A damaged key file (shorter than any key pixport writes) is replaced.
      await rename(temporary, path);
    } else {
      await link(temporary, path).catch((error: unknown) => {
        // Another process made it first: its key is the one read below.
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      });
    }
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
  return read();
}
