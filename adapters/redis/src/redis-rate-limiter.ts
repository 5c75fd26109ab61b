import { randomUUID } from "node:crypto";
import type { Clock, RateLimiter } from "@pixport/core";
import { z } from "zod";
import {
  createCaller,
  defineScript,
  parseRedisOptions,
  redisAdapterOptionsSchema,
  script,
} from "./client.js";

// Sliding log in one sorted set per key, trimmed and counted atomically. Time comes from Redis
// (TIME) unless the caller passes `now`, so nodes with skewed clocks agree. Rejected requests are
// never added. Returns {allowed, remaining, resetMs}.
const SLIDING_LOG = `
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
else
  now = tonumber(ARGV[3])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  count = count + 1
  local remaining = limit - count
  local reset = 0
  if remaining == 0 then
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    reset = tonumber(oldest[2]) + window - now
  end
  return {1, remaining, reset}
end
local pivot = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
return {0, 0, tonumber(pivot[2]) + window - now}
`;

/** Options of {@link createRedisRateLimiter}. */
export const redisRateLimiterOptionsSchema = redisAdapterOptionsSchema.safeExtend({
  /**
   * Time source. By default the script reads Redis' own clock (`TIME`), one source for every node;
   * inject a clock only for tests.
   */
  clock: z
    .custom<Clock>((value) => typeof (value as Partial<Clock> | null)?.now === "function", {
      message: "must be a Clock (an object with now())",
    })
    .optional(),
});

/** Options of {@link createRedisRateLimiter}; see {@link redisRateLimiterOptionsSchema}. */
export type RedisRateLimiterOptions = z.input<typeof redisRateLimiterOptionsSchema>;

/**
 * A strict sliding-window RateLimiter on Redis: one sorted set per key (`{prefix}rate:{key}`),
 * trimmed, counted and appended in one Lua script, so any number of server processes share one
 * exact limit. Memory per key is bounded by the limit; keys expire after one idle window.
 *
 * @example
 * ```ts
 * const limiter = createRedisRateLimiter({ client: new Redis(url, { enableOfflineQueue: false }) });
 * const decision = await limiter.consume({ key: caller.keyId, limit: 10, windowMs: 60_000 });
 * ```
 */
export function createRedisRateLimiter(input: RedisRateLimiterOptions): RateLimiter {
  const options = parseRedisOptions(redisRateLimiterOptionsSchema, input, "createRedisRateLimiter");
  const prefix = options.prefix;
  const call = createCaller(options);
  defineScript(options.client, "pixportSlidingLog", 1, SLIDING_LOG);
  const run = script(options.client, "pixportSlidingLog");
  return {
    consume({ key, limit, windowMs }) {
      const now = options.clock === undefined ? "" : String(options.clock.now().getTime());
      return call("rate limit", async () => {
        const [allowed, remaining, resetMs] = (await run(
          `${prefix}rate:{${key}}`,
          limit,
          windowMs,
          now,
          randomUUID(),
        )) as [number, number, number];
        return { allowed: allowed === 1, limit, remaining, resetMs: Math.max(0, resetMs) };
      });
    },
  };
}
