import { readFile } from "node:fs/promises";
import path from "node:path";
import {
  type AccountStore,
  type BlobStore,
  type Clock,
  createBlobStorePublisher,
  createCachingBlobStore,
  createImagePipeline,
  type ImageCodec,
  type ImageFetcher,
  type ImagePipeline,
  type KeyStore,
  type Logger,
  type QuotaStore,
  type RateLimiter,
} from "@pixport/core";
import { createNodeImageFetcher } from "@pixport/fetch-node";
import {
  createRedisAccountStore,
  createRedisKeyStore,
  createRedisQuotaStore,
  createRedisRateLimiter,
} from "@pixport/redis";
import {
  createFsAccountStore,
  createFsBlobStore,
  createFsImageRepository,
  createFsKeyStore,
} from "@pixport/storage-fs";
import { Redis } from "ioredis";
import type { ServerConfig } from "./config.js";

/** Data directory layout of the embedded deployment. */
export function dataPaths(dataDir: string) {
  return {
    blobs: path.join(dataDir, "blobs"),
    publicBlobs: path.join(dataDir, "public"),
    images: path.join(dataDir, "images"),
    keys: path.join(dataDir, "keys"),
    accounts: path.join(dataDir, "accounts"),
  };
}

/** Programmatic extras that a config file cannot express. */
export interface RuntimeOptions {
  /**
   * The fetcher of create-from-URL. Tests inject one with a test resolver and CA.
   * @default createNodeImageFetcher() (system DNS and roots, public addresses only, port 443)
   */
  imageFetcher?: ImageFetcher;
  /** Time source of the policies and records (tests move it by hand). @default the system clock */
  clock?: Clock;
}

/** Everything a deployment runs on, built from its config; shared by `serve` and the CLI. */
export interface PixportRuntime {
  pipeline: ImagePipeline;
  keys: KeyStore;
  accounts: AccountStore;
  /** Where published copies live (served under `/images/`). */
  publicStore: BlobStore;
  /** Releases connections (Redis). */
  close(): Promise<void>;
}

/**
 * Builds the deployment: the configured codec, files under the data directory, and either
 * in-process policy state (keys in the data directory) or Redis for keys, accounts, rate limits and
 * quota (`redisUrl`), so several processes share one set of limits.
 */
export async function createPixportRuntime(
  config: ServerConfig,
  logger: Logger,
  options: RuntimeOptions = {},
): Promise<PixportRuntime> {
  const paths = dataPaths(config.dataDir);
  const privateBlobs = createFsBlobStore({ root: paths.blobs });
  // Hot sources (one upload, many derived sizes) are read from disk once; keys are write-once.
  const blobStore =
    config.blobCacheBytes > 0
      ? createCachingBlobStore(privateBlobs, { maxBytes: config.blobCacheBytes })
      : privateBlobs;
  const publicStore = createFsBlobStore({ root: paths.publicBlobs });
  const images = createFsImageRepository({ root: paths.images });
  const fsKeys = createFsKeyStore({ root: paths.keys });
  // Temp files left by a crash are invisible to reads; remove them once at start.
  await Promise.all([privateBlobs, publicStore, fsKeys, images].map((store) => store.sweepTemporaryFiles()));

  let redis: Redis | undefined;
  let policyState: {
    keys: KeyStore;
    accounts?: AccountStore;
    rateLimiter?: RateLimiter;
    quota?: QuotaStore;
  } = {
    keys: fsKeys,
  };
  if (config.redisUrl !== undefined) {
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
    };
  }
  const codec = await createCodec(config);
  const testWatermark =
    config.testWatermarkFile === undefined ? undefined : await loadMark(codec, config.testWatermarkFile);
  const pipeline = createImagePipeline(
    {
      codec,
      blobStore,
      images,
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      keys: policyState.keys,
      accounts: policyState.accounts,
      ...(policyState.rateLimiter === undefined ? {} : { rateLimiter: policyState.rateLimiter }),
      ...(policyState.quota === undefined ? {} : { quota: policyState.quota }),
      publisher: createBlobStorePublisher({
        source: blobStore,
        target: publicStore,
        publicBaseUrl: config.publicStorageBaseUrl,
      }),
      logger,
      // URL import: own-storage URLs are read from the public store; others go through the
      // SSRF-safe fetcher (public addresses only, pinned connections, manual redirects).
      fetcher: options.imageFetcher ?? createNodeImageFetcher(),
      publicBlobStore: publicStore,
    },
    {
      limits: config.limits,
      encodeQuality: config.encodeQuality,
      policies: config.policies,
      ...(testWatermark === undefined ? {} : { testWatermark }),
      urlImport: { ...config.urlImport, storageBaseUrls: [config.publicStorageBaseUrl] },
    },
  );
  return {
    pipeline,
    keys: policyState.keys,
    accounts: pipeline.context.policy.accounts,
    publicStore,
    async close() {
      if (redis !== undefined) await redis.quit().catch(() => redis?.disconnect());
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
    return createJimpCodec({ maxInputPixels });
  }
  const { createSharpCodec } = await import("@pixport/codec-sharp");
  return createSharpCodec({ maxInputPixels });
}

/** Reads a custom test mark and its size (header only). */
async function loadMark(codec: ImageCodec, file: string) {
  const image = new Uint8Array(await readFile(file));
  const header = await codec.probe(image);
  if (header === null) throw new TypeError(`testWatermarkFile ${file} is not a png, jpeg or webp image`);
  return { image, width: header.width, height: header.height };
}
