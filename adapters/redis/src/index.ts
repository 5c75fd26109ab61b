export type { RedisAdapterOptions } from "./client.js";
export { createRedisImageRepository, imageSortMember } from "./redis-image-repository.js";
export { createRedisAccountStore, createRedisKeyStore } from "./redis-key-store.js";
export { createRedisLockService, type RedisLockServiceOptions } from "./redis-lock-service.js";
export { createRedisQuotaStore } from "./redis-quota-store.js";
export { createRedisRateLimiter, type RedisRateLimiterOptions } from "./redis-rate-limiter.js";
