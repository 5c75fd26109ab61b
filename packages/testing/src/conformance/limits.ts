import type { AccountStore, Clock, QuotaStore, RateLimiter } from "@pixport/core";
import { describe, expect, it } from "vitest";

/** A clock the suites move by hand. */
export interface ManualClock extends Clock {
  /** Moves time forward by `ms`. */
  advance(ms: number): void;
  /** Sets the time, ms since the epoch. */
  set(ms: number): void;
}

/** A {@link ManualClock} starting at `start` (ms since the epoch). */
export function createManualClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): ManualClock {
  let now = start;
  return {
    now: () => new Date(now),
    advance: (ms) => {
      now += ms;
    },
    set: (ms) => {
      now = ms;
    },
  };
}

/** Options of {@link describeRateLimiterConformance}. */
export interface RateLimiterConformanceOptions {
  name: string;
  /**
   * Creates a fresh limiter (empty backend or a unique key prefix) whose time comes from `clock`.
   * `peer` (optional) opens a second instance on the same backend, standing in for another process.
   */
  create: (clock: Clock) => Promise<{ limiter: RateLimiter; peer?: () => Promise<RateLimiter> }>;
}

const MINUTE = 60_000;

/** The behaviour every RateLimiter must show (see the port's TSDoc). */
export function describeRateLimiterConformance(options: RateLimiterConformanceOptions): void {
  describe(`RateLimiter conformance: ${options.name}`, () => {
    const setup = async () => {
      const clock = createManualClock();
      return { clock, ...(await options.create(clock)) };
    };
    const consumeMany = (limiter: RateLimiter, count: number, key = "k") =>
      Promise.all(Array.from({ length: count }, () => limiter.consume({ key, limit: 10, windowMs: MINUTE })));

    it("admits exactly the limit in a window and reports remaining and reset", async () => {
      const { limiter, clock } = await setup();
      const first = await limiter.consume({ key: "k", limit: 3, windowMs: MINUTE });
      expect(first).toEqual({ allowed: true, limit: 3, remaining: 2, resetMs: 0 });
      clock.advance(1_000);
      expect((await limiter.consume({ key: "k", limit: 3, windowMs: MINUTE })).remaining).toBe(1);
      clock.advance(1_000);
      const third = await limiter.consume({ key: "k", limit: 3, windowMs: MINUTE });
      expect(third).toMatchObject({ allowed: true, remaining: 0 });
      expect(third.resetMs).toBe(MINUTE - 2_000);
      clock.advance(18_000);
      const refused = await limiter.consume({ key: "k", limit: 3, windowMs: MINUTE });
      expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetMs: 40_000 });
    });

    it("slides: requests leave the window exactly windowMs after they were admitted", async () => {
      const { limiter, clock } = await setup();
      for (let index = 0; index < 5; index++)
        expect((await limiter.consume({ key: "k", limit: 10, windowMs: MINUTE })).allowed).toBe(true);
      clock.advance(30_000);
      for (let index = 0; index < 5; index++)
        expect((await limiter.consume({ key: "k", limit: 10, windowMs: MINUTE })).allowed).toBe(true);
      clock.advance(29_999);
      expect((await limiter.consume({ key: "k", limit: 10, windowMs: MINUTE })).allowed).toBe(false);
      clock.advance(1);
      const admitted = (await consumeMany(limiter, 8)).filter((decision) => decision.allowed).length;
      expect(admitted).toBe(5);
    });

    it("has no burst at a fixed-window edge: never more than the limit in any interval", async () => {
      const { limiter, clock } = await setup();
      clock.advance(59_000);
      expect((await consumeMany(limiter, 10)).every((decision) => decision.allowed)).toBe(true);
      clock.advance(2_000);
      expect((await consumeMany(limiter, 10)).some((decision) => decision.allowed)).toBe(false);
    });

    it("does not count rejected requests against later ones", async () => {
      const { limiter, clock } = await setup();
      await consumeMany(limiter, 10);
      for (let second = 1; second < 60; second++) {
        clock.advance(1_000);
        expect((await limiter.consume({ key: "k", limit: 10, windowMs: MINUTE })).allowed).toBe(false);
      }
      clock.advance(1_000);
      expect((await consumeMany(limiter, 10)).every((decision) => decision.allowed)).toBe(true);
    });

    it("keeps keys and limits independent", async () => {
      const { limiter } = await setup();
      await consumeMany(limiter, 10, "a");
      expect((await limiter.consume({ key: "a", limit: 10, windowMs: MINUTE })).allowed).toBe(false);
      expect((await limiter.consume({ key: "b", limit: 10, windowMs: MINUTE })).allowed).toBe(true);
      expect((await limiter.consume({ key: "a", limit: 100, windowMs: MINUTE })).allowed).toBe(true);
    });

    it("admits exactly the limit out of 50 concurrent requests, across instances when shared", async () => {
      const { limiter, peer } = await setup();
      const other = peer === undefined ? limiter : await peer();
      const decisions = await Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          (index % 2 === 0 ? limiter : other).consume({ key: "busy", limit: 10, windowMs: MINUTE }),
        ),
      );
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(10);
    });
  });
}

/** Options of {@link describeQuotaStoreConformance}. */
export interface QuotaStoreConformanceOptions {
  name: string;
  /** A fresh store; `peer` opens a second instance on the same backend. */
  create: () => Promise<{ store: QuotaStore; peer?: () => Promise<QuotaStore> }>;
}

/** The behaviour every QuotaStore must show (see the port's TSDoc). */
export function describeQuotaStoreConformance(options: QuotaStoreConformanceOptions): void {
  describe(`QuotaStore conformance: ${options.name}`, () => {
    const request = { accountId: "acme", period: "2026-11", units: 1, limit: 25 };

    it("reserves up to the limit and refuses without changing the count", async () => {
      const { store } = await options.create();
      for (let used = 1; used <= 25; used++) {
        expect(await store.reserve(request)).toEqual({ granted: true, used, limit: 25 });
      }
      expect(await store.reserve(request)).toEqual({ granted: false, used: 25, limit: 25 });
      expect(await store.usage("acme", "2026-11")).toBe(25);
    });

    it("refuses a 2-unit reservation that would overshoot by one", async () => {
      const { store } = await options.create();
      for (let used = 0; used < 24; used++) await store.reserve(request);
      expect(await store.reserve({ ...request, units: 2 })).toEqual({ granted: false, used: 24, limit: 25 });
      expect(await store.reserve(request)).toMatchObject({ granted: true, used: 25 });
    });

    it("grants exactly one of 50 concurrent reservations at 24 of 25, across instances when shared", async () => {
      const { store, peer } = await options.create();
      const other = peer === undefined ? store : await peer();
      for (let used = 0; used < 24; used++) await store.reserve(request);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, index) => (index % 2 === 0 ? store : other).reserve(request)),
      );
      expect(results.filter((result) => result.granted)).toHaveLength(1);
      expect(await other.usage("acme", "2026-11")).toBe(25);
    });

    it("gives back released units, never below zero", async () => {
      const { store } = await options.create();
      await store.reserve({ ...request, units: 2 });
      await store.release({ accountId: "acme", period: "2026-11", units: 1 });
      expect(await store.usage("acme", "2026-11")).toBe(1);
      await store.release({ accountId: "acme", period: "2026-11", units: 5 });
      expect(await store.usage("acme", "2026-11")).toBe(0);
    });

    it("keeps accounts and periods apart", async () => {
      const { store } = await options.create();
      await store.reserve(request);
      expect(await store.usage("acme", "2026-12")).toBe(0);
      expect(await store.usage("other", "2026-11")).toBe(0);
      expect(await store.reserve({ ...request, period: "2026-12", limit: 1 })).toMatchObject({
        granted: true,
        used: 1,
      });
    });
  });
}

/** Options of {@link describeAccountStoreConformance}. */
export interface AccountStoreConformanceOptions {
  name: string;
  create: () => Promise<{ store: AccountStore; peer?: () => Promise<AccountStore> }>;
}

/** The behaviour every AccountStore must show (see the port's TSDoc). */
export function describeAccountStoreConformance(options: AccountStoreConformanceOptions): void {
  describe(`AccountStore conformance: ${options.name}`, () => {
    it("returns null for an unknown account and stores the upgrade flag idempotently", async () => {
      const { store, peer } = await options.create();
      expect(await store.get("acme")).toBeNull();
      expect(await store.setUpgraded("acme", true)).toEqual({ id: "acme", upgraded: true });
      expect(await store.setUpgraded("acme", true)).toEqual({ id: "acme", upgraded: true });
      const reader = peer === undefined ? store : await peer();
      expect(await reader.get("acme")).toEqual({ id: "acme", upgraded: true });
      await store.setUpgraded("acme", false);
      expect(await reader.get("acme")).toEqual({ id: "acme", upgraded: false });
      expect(await reader.get("other")).toBeNull();
    });
  });
}
