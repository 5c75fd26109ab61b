export { type RedisAdapterOptions, redisAdapterOptionsSchema } from "./client.js";
export { createRedisImageRepository, imageSortMember } from "./redis-image-repository.js";
export { createRedisAccountStore, createRedisKeyStore } from "./redis-key-store.js";
export {
  createRedisLockService,
  type RedisLockServiceOptions,
  redisLockServiceOptionsSchema,
} from "./redis-lock-service.js";
export { createRedisQuotaStore } from "./redis-quota-store.js";
export {
  createRedisRateLimiter,
  type RedisRateLimiterOptions,
  redisRateLimiterOptionsSchema,
} from "./redis-rate-limiter.js";
