import {
  type AccountStore,
  createMemoryAccountStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  type ImageRepository,
  type KeyStore,
  type LockService,
  type Logger,
  type QuotaStore,
  type RateLimiter,
} from "@pixport/core";
import {
  createFsAccountStore,
  createFsImageRepository,
  createFsKeyStore,
  createFsQuotaStore,
} from "@pixport/storage-fs";
import { metadataStoreOf, type ResolvedPixportContainerConfig } from "../config.js";
import { pixportDataPaths } from "../data-paths.js";
import type { OwnedResources } from "../lifecycle.js";
import { importOptional } from "./optional-import.js";

/**
 * Image records and policy state. Unset fields (the per-minute rate limiter, the locks, and the
 * quota without a data directory or Redis) get the in-memory defaults of this process.
 */
export interface State {
  images: () => ImageRepository;
  keys: KeyStore;
  accounts: AccountStore;
  quota?: QuotaStore;
  rateLimiter?: RateLimiter;
  locks?: LockService;
}

/**
 * Keys, account flags and quota counters: in Redis with `redisUrl` (several processes enforce one
 * set of limits), else in the data directory (durable across restarts and kill -9, and shared with
 * the CLI, another process, which changes flags and reads usage while the server runs), else in
 * memory. Per-minute rate-limit counters stay in this process unless Redis holds them.
 */
export async function createState(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  logger: Logger,
): Promise<State> {
  const redis =
    settings.redisUrl === undefined ? undefined : await createRedisState(settings.redisUrl, owned, logger);
  const paths = settings.dataDir === undefined ? undefined : pixportDataPaths(settings.dataDir);
  const images = createImages(settings, owned, redis?.images);
  if (redis !== undefined) return { ...redis.state, images };
  if (paths === undefined) {
    return { images, keys: createMemoryKeyStore(), accounts: createMemoryAccountStore() };
  }
  const keys = createFsKeyStore({ root: paths.keys });
  const quota = createFsQuotaStore({ root: paths.quota });
  owned.sweeps.push(() => keys.sweepTemporaryFiles());
  owned.flushes.push(() => quota.flush());
  return { images, keys, accounts: createFsAccountStore({ root: paths.accounts }), quota };
}

function createImages(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  redisImages: (() => ImageRepository) | undefined,
): () => ImageRepository {
  const store = metadataStoreOf(settings);
  if (store === "redis") return redisImages as () => ImageRepository;
  if (store === "memory") return () => createMemoryImageRepository();
  const images = createFsImageRepository({ root: pixportDataPaths(settings.dataDir as string).images });
  owned.sweeps.push(() => images.sweepTemporaryFiles());
  return () => images;
}

const IOREDIS = "ioredis";

/** The part of ioredis' client that the container itself uses (the adapters get the whole client). */
interface RedisConnection {
  on(event: "error", listener: (error: Error) => void): unknown;
  once(event: "ready", listener: () => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}
type RedisConstructor = new (
  url: string,
  options: { enableOfflineQueue: boolean; maxRetriesPerRequest: number },
) => RedisConnection;

/**
 * The Redis adapters over one connection. ioredis and the adapters are imported only when Redis is
 * configured: on the embedded defaults they would only cost memory (ioredis alone: 8-10 MB of RSS).
 */
async function createRedisState(url: string, owned: OwnedResources, logger: Logger) {
  const [adapters, { Redis }] = await Promise.all([
    importOptional(() => import("@pixport/redis"), "@pixport/redis", "redisUrl"),
    // By a computed name: type checking then sees only the ioredis the Redis adapter is typed
    // against (a second resolved copy makes its inferred option types unnameable).
    importOptional(() => import(IOREDIS) as Promise<{ Redis: RedisConstructor }>, "ioredis", "redisUrl"),
  ]);
  // Fail fast during an outage instead of queueing commands: the outage policy answers 503.
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  client.on("error", (error: Error) => logger.warn?.("redis connection error", { error: error.message }));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.disconnect();
      reject(new Error(`Could not connect to Redis at ${url}`));
    }, 10_000);
    client.once("ready", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  // Redis closes before the S3 client, which storage registered first.
  owned.connections.unshift(async () => {
    await client.quit().catch(() => client.disconnect());
  });
  const shared = {
    client: client as unknown as Parameters<typeof adapters.createRedisKeyStore>[0]["client"],
  };
  return {
    images: () => adapters.createRedisImageRepository(shared),
    state: {
      keys: adapters.createRedisKeyStore(shared),
      accounts: adapters.createRedisAccountStore(shared),
      rateLimiter: adapters.createRedisRateLimiter(shared),
      quota: adapters.createRedisQuotaStore(shared),
      // Publish, unpublish and delete of one image are serialised across every node.
      locks: adapters.createRedisLockService(shared),
    },
  };
}
