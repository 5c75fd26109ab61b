import type { QuotaStore } from "@pixport/core";
import {
  createCaller,
  defineScript,
  parseRedisOptions,
  type RedisAdapterOptions,
  redisAdapterOptionsSchema,
  script,
} from "./client.js";

// Check-and-add in one script: concurrent reservations from any number of nodes never overshoot.
const RESERVE = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local units = tonumber(ARGV[1])
if used + units > tonumber(ARGV[2]) then
  return {0, used}
end
used = redis.call('INCRBY', KEYS[1], units)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, used}
`;

// Give back units, never below zero.
const RELEASE = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = used - tonumber(ARGV[1])
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], left, 'KEEPTTL')
return left
`;

/** Counters outlive their period by this long (a month is at most 31 days). */
const COUNTER_TTL_SECONDS = 62 * 24 * 60 * 60;

/**
 * A QuotaStore on Redis: one counter per account and period (`{prefix}quota:{account}:period`),
 * reserved and released by Lua scripts. Counters expire 62 days after their last change.
 *
 * Redis must not evict these keys: run it with `maxmemory-policy noeviction` (an evicted counter is
 * a quota reset).
 *
 * @example
 * ```ts
 * const quota = createRedisQuotaStore({ client: new Redis(url) });
 * const pipeline = createImagePipeline({ ...deps, quota });
 * ```
 */
export function createRedisQuotaStore(input: RedisAdapterOptions): QuotaStore {
  const options = parseRedisOptions(redisAdapterOptionsSchema, input, "createRedisQuotaStore");
  const prefix = options.prefix;
  const call = createCaller(options);
  defineScript(options.client, "pixportQuotaReserve", 1, RESERVE);
  defineScript(options.client, "pixportQuotaRelease", 1, RELEASE);
  const reserve = script(options.client, "pixportQuotaReserve");
  const release = script(options.client, "pixportQuotaRelease");
  const keyOf = (accountId: string, period: string) => `${prefix}quota:{${accountId}}:${period}`;
  return {
    reserve({ accountId, period, units, limit }) {
      return call("quota reserve", async () => {
        const [granted, used] = (await reserve(
          keyOf(accountId, period),
          units,
          limit,
          COUNTER_TTL_SECONDS,
        )) as [number, number];
        return { granted: granted === 1, used, limit };
      });
    },
    release({ accountId, period, units }) {
      return call("quota release", async () => {
        await release(keyOf(accountId, period), units);
      });
    },
    usage(accountId, period) {
      return call("quota usage", async () =>
        Number((await options.client.get(keyOf(accountId, period))) ?? 0),
      );
    },
  };
}
