import type { QuotaStore } from "../ports/quota-store.js";

/**
 * A QuotaStore in process memory (the single-process default).
 *
 * @example
 * ```ts
 * const quota = createMemoryQuotaStore();
 * await quota.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 });
 * ```
 */
export function createMemoryQuotaStore(): QuotaStore {
  const counters = new Map<string, number>();
  const keyOf = (accountId: string, period: string) => `${accountId}\u0000${period}`;
  return {
    async reserve({ accountId, period, units, limit }) {
      const key = keyOf(accountId, period);
      const used = counters.get(key) ?? 0;
      if (used + units > limit) return { granted: false, used, limit };
      counters.set(key, used + units);
      return { granted: true, used: used + units, limit };
    },
    async release({ accountId, period, units }) {
      const key = keyOf(accountId, period);
      counters.set(key, Math.max(0, (counters.get(key) ?? 0) - units));
    },
    async usage(accountId, period) {
      return counters.get(keyOf(accountId, period)) ?? 0;
    },
  };
}
