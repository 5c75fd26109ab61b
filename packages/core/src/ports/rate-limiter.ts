/** What {@link RateLimiter.consume} decided. */
export interface RateLimitDecision {
  /** Whether this request was admitted (and recorded). */
  allowed: boolean;
  /** The limit the decision was made against. */
  limit: number;
  /** Requests still admissible in the current window after this decision. */
  remaining: number;
  /**
   * Milliseconds until the window has room again for one more request: 0 when `remaining > 0`,
   * else the time until the oldest admitted request leaves the window.
   */
  resetMs: number;
}

/** Input of {@link RateLimiter.consume}. */
export interface RateLimitRequest {
  /** The bucket, e.g. an API key id. */
  key: string;
  /** Most requests admitted in any window of `windowMs`. */
  limit: number;
  /** Window length in milliseconds. */
  windowMs: number;
}

/**
 * A strict sliding-window (sliding log) request limiter.
 *
 * Semantics every adapter must keep (checked by the RateLimiter conformance suite):
 * - Never more than `limit` requests are admitted in ANY interval of `windowMs` (no burst at a
 *   window edge, unlike fixed windows).
 * - Rejected requests are not recorded: they never use up budget of later requests.
 * - `consume` is atomic: concurrent calls from any number of processes sharing the backend admit
 *   exactly `limit` of them in a fresh window.
 * - Time comes from one source per backend (the injected clock in memory; Redis `TIME` in Redis
 *   unless a clock is injected), so processes with skewed clocks still agree.
 * - Outages throw `ImagePipelineError` with code `STORAGE_UNAVAILABLE`.
 */
export interface RateLimiter {
  consume(request: RateLimitRequest): Promise<RateLimitDecision>;
}
