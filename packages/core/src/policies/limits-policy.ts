import { z } from "zod";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../errors.js";
import type { KeyKind } from "../image.js";
import type { AccountStore } from "../ports/account-store.js";
import type { Clock } from "../ports/clock.js";
import type { QuotaStore } from "../ports/quota-store.js";
import type { RateLimitDecision, RateLimiter } from "../ports/rate-limiter.js";

/** The service's policies, with the contract's numbers as defaults. */
export const policyOptionsSchema = z.object({
  /** Requests per minute of a test key. @default 10 */
  testRequestsPerMinute: z.number().int().positive().default(10),
  /** Requests per minute of a live key. @default 100 */
  liveRequestsPerMinute: z.number().int().positive().default(100),
  /** Processed images per UTC calendar month of a live trial (not upgraded) account. @default 25 */
  trialImagesPerMonth: z.number().int().nonnegative().default(25),
  /**
   * Variants computed per UTC calendar month for the images of a trial (not upgraded) account:
   * cache misses of its variant URLs, published or signed. Past it, a miss answers 403
   * `QUOTA_EXCEEDED` (variants already cached are still served). Never billed. @default 1000
   */
  trialVariantsPerMonth: z.number().int().nonnegative().default(1000),
  /** Days a test-stage image is kept. @default 90 */
  testRetentionDays: z.number().positive().default(90),
  /**
   * What happens when the limiter or quota store is unreachable: `fail-closed` answers 503 with
   * `Retry-After` (nothing is processed without a decision); `fail-open` lets requests through
   * without rate limiting or quota while the store is down (logged).
   * @default "fail-closed"
   */
  onStoreOutage: z.enum(["fail-closed", "fail-open"]).default("fail-closed"),
});

export type PolicyOptions = z.output<typeof policyOptionsSchema>;

/** What the policies need from the caller. */
export interface PolicySubject {
  accountId: string;
  keyKind: KeyKind;
  keyId: string;
  /** Per-key override of the requests-per-minute limit. */
  rateLimitPerMinute?: number | null;
}

/** The UTC calendar month of an instant, e.g. `2026-11`: the quota period. */
export function quotaPeriod(instant: Date): string {
  return instant.toISOString().slice(0, 7);
}

/** Requests per minute that apply to a key. */
export function requestsPerMinute(subject: PolicySubject, policies: PolicyOptions): number {
  if (subject.rateLimitPerMinute !== undefined && subject.rateLimitPerMinute !== null)
    return subject.rateLimitPerMinute;
  return subject.keyKind === "test" ? policies.testRequestsPerMinute : policies.liveRequestsPerMinute;
}

/** Dependencies of the policy functions. */
export interface PolicyContext {
  rateLimiter: RateLimiter;
  quota: QuotaStore;
  accounts: AccountStore;
  clock: Clock;
  policies: PolicyOptions;
  onOutage(what: string, error: unknown): void;
}

function isOutage(error: unknown): boolean {
  return isImagePipelineError(error) && error.code === ErrorCodes.STORAGE_UNAVAILABLE;
}

/**
 * Counts one request against the key's sliding 60-second window. Returns the decision (for the
 * rate-limit headers) when admitted; throws `RATE_LIMITED` with `retryAfterSeconds` otherwise.
 * Under `fail-open`, an unreachable limiter admits the request and returns `null`.
 */
export async function admitRequest(
  context: PolicyContext,
  subject: PolicySubject,
): Promise<RateLimitDecision | null> {
  const limit = requestsPerMinute(subject, context.policies);
  let decision: RateLimitDecision;
  try {
    decision = await context.rateLimiter.consume({ key: subject.keyId, limit, windowMs: 60_000 });
  } catch (error) {
    if (context.policies.onStoreOutage === "fail-open" && isOutage(error)) {
      context.onOutage("rate limiter", error);
      return null;
    }
    throw error;
  }
  if (!decision.allowed) {
    throw new RateLimitedError(decision);
  }
  return decision;
}

/** The marker of {@link RateLimitedError}, shared by every copy of the package. */
const RATE_LIMITED: unique symbol = Symbol.for("pixport.error.rate-limited");

/** `RATE_LIMITED` carrying the decision, so the HTTP layer can still send the rate-limit headers. */

export class RateLimitedError extends ImagePipelineError {
  /**
   * True for a `RateLimitedError`, even one thrown by another copy of `@pixport/core` (it checks a
   * `Symbol.for` marker, not `instanceof`).
   */
  static isInstance(value: unknown): value is RateLimitedError {
    return (
      isImagePipelineError(value) && (value as unknown as Record<symbol, unknown>)[RATE_LIMITED] === true
    );
  }

  readonly [RATE_LIMITED] = true;
  readonly decision: RateLimitDecision;
  constructor(decision: RateLimitDecision) {
    super(
      ErrorCodes.RATE_LIMITED,
      `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${Math.ceil(decision.resetMs / 1000)} s.`,
      { retryAfterSeconds: Math.max(1, Math.ceil(decision.resetMs / 1000)) },
    );
    this.decision = decision;
  }
}

/**
 * Runs a billable operation under the monthly quota: live keys of trial accounts reserve `units`
 * first (refused with `QUOTA_EXCEEDED` when the month's allowance is used up); upgraded accounts
 * are counted without a cap; test keys are never counted. A failed operation gives its
 * reservation back.
 */
export async function withQuota<T>(
  context: PolicyContext,
  subject: PolicySubject,
  units: number,
  operation: () => Promise<T>,
): Promise<T> {
  if (subject.keyKind === "test" || units === 0) return operation();
  const period = quotaPeriod(context.clock.now());
  let reserved = false;
  try {
    const account = await context.accounts.get(subject.accountId);
    const limit = account?.upgraded === true ? Number.MAX_SAFE_INTEGER : context.policies.trialImagesPerMonth;
    const reservation = await context.quota.reserve({ accountId: subject.accountId, period, units, limit });
    if (!reservation.granted) {
      throw new ImagePipelineError(
        ErrorCodes.QUOTA_EXCEEDED,
        `The monthly quota of ${limit} processed images of this trial account is used up (${reservation.used} used in ${period}); upgrade the account to continue.`,
      );
    }
    reserved = true;
  } catch (error) {
    if (context.policies.onStoreOutage === "fail-open" && isOutage(error)) {
      context.onOutage("quota store", error);
    } else {
      throw error;
    }
  }
  try {
    return await operation();
  } catch (error) {
    if (reserved) {
      await context.quota
        .release({ accountId: subject.accountId, period, units })
        .catch((releaseError: unknown) => context.onOutage("quota release", releaseError));
    }
    throw error;
  }
}
