import { randomBytes } from "node:crypto";
import { ErrorCodes, ImagePipelineError, type LockService } from "@pixport/core";
import { z } from "zod";
import {
  createCaller,
  defineScript,
  parseRedisOptions,
  redisAdapterOptionsSchema,
  script,
} from "./client.js";

// Release and renew only a lock this holder still owns (its random token), never another's.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** Options of {@link createRedisLockService}. */
export const redisLockServiceOptionsSchema = redisAdapterOptionsSchema.safeExtend({
  /**
   * Lease of a lock, ms: a holder that dies (kill -9, lost network) blocks the key at most this
   * long. A live holder renews its lease every third of it. @default 15000
   */
  leaseMs: z.number().int().min(100).max(600_000).default(15_000),
  /** Longest wait for a busy lock before `STORAGE_UNAVAILABLE` (503, retry), ms. @default 10000 */
  waitMs: z.number().int().nonnegative().max(600_000).default(10_000),
});

/** Options of {@link createRedisLockService}; see {@link redisLockServiceOptionsSchema}. */
export type RedisLockServiceOptions = z.input<typeof redisLockServiceOptionsSchema>;

/**
 * A LockService on Redis for several nodes sharing one deployment: `SET key token NX PX lease`,
 * renewed while the task runs and released by a compare-and-delete script, so a holder never
 * releases a lock that expired and was taken by another. Waiters poll with a short back-off.
 *
 * Limits: a holder paused longer than the lease (a stopped process) can overlap with the next
 * holder; pixport's locked tasks (a copy or a delete of one object) take far less than the lease.
 *
 * @example
 * ```ts
 * const locks = createRedisLockService({ client: new Redis(url) });
 * const pipeline = createImagePipeline({ ...deps, locks });
 * ```
 */
export function createRedisLockService(input: RedisLockServiceOptions): LockService {
  const options = parseRedisOptions(redisLockServiceOptionsSchema, input, "createRedisLockService");
  const { prefix, leaseMs, waitMs } = options;
  const call = createCaller(options);
  defineScript(options.client, "pixportLockRelease", 1, RELEASE);
  defineScript(options.client, "pixportLockRenew", 1, RENEW);
  const release = script(options.client, "pixportLockRelease");
  const renew = script(options.client, "pixportLockRenew");

  return {
    async withLock(key, task) {
      const redisKey = `${prefix}lock:{${key}}`;
      const token = randomBytes(16).toString("hex");
      const deadline = Date.now() + waitMs;
      for (let attempt = 0; ; attempt++) {
        const acquired = await call("lock acquire", () =>
          options.client.set(redisKey, token, "PX", leaseMs, "NX"),
        );
        if (acquired === "OK") break;
        if (Date.now() > deadline) {
          throw new ImagePipelineError(
            ErrorCodes.STORAGE_UNAVAILABLE,
            `Another request holds ${key}; retry later.`,
            { retryAfterSeconds: 1 },
          );
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(5 + attempt * 5, 50)));
      }
      const renewal = setInterval(
        () => {
          void call("lock renew", () => renew(redisKey, token, leaseMs)).catch(() => undefined);
        },
        Math.max(100, Math.floor(leaseMs / 3)),
      );
      renewal.unref();
      try {
        return await task();
      } finally {
        clearInterval(renewal);
        await call("lock release", () => release(redisKey, token)).catch(() => undefined);
      }
    },
  };
}
