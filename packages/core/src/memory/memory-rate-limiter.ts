import type { Clock } from "../ports/clock.js";
import { systemClock } from "../ports/clock.js";
import type { RateLimiter } from "../ports/rate-limiter.js";

/**
 * A sliding-log RateLimiter in process memory (the single-process default). Each key keeps the
 * admission times of at most `limit` requests; memory per key is bounded by the limit.
 *
 * @example
 * ```ts
 * const rateLimiter = createMemoryRateLimiter();
 * const decision = await rateLimiter.consume({ key: "key_1", limit: 10, windowMs: 60_000 });
 * ```
 */
export function createMemoryRateLimiter(options: { clock?: Clock } = {}): RateLimiter {
  const clock = options.clock ?? systemClock;
  const logs = new Map<string, number[]>();
  return {
    async consume({ key, limit, windowMs }) {
      const now = clock.now().getTime();
      const log = (logs.get(key) ?? []).filter((time) => time > now - windowMs);
      if (log.length < limit) {
        log.push(now);
        logs.set(key, log);
        const remaining = limit - log.length;
        return {
          allowed: true,
          limit,
          remaining,
          resetMs: remaining > 0 ? 0 : (log[0] as number) + windowMs - now,
        };
      }
      logs.set(key, log);
      return {
        allowed: false,
        limit,
        remaining: 0,
        resetMs: (log[log.length - limit] as number) + windowMs - now,
      };
    },
  };
}
