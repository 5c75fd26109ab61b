/** Input of {@link QuotaStore.reserve}. */
export interface QuotaReserveRequest {
  accountId: string;
  /** The billing period, e.g. `2026-11` (UTC calendar month). Counters of other periods are separate. */
  period: string;
  /** Units to reserve (processed images: 1, or 2 for remove-background). */
  units: number;
  /** Most units the account may use in the period. */
  limit: number;
}

/** What {@link QuotaStore.reserve} decided. */
export interface QuotaReservation {
  /** Whether the units were reserved. */
  granted: boolean;
  /** Units used in the period after this call (unchanged when refused). */
  used: number;
  limit: number;
}

/**
 * Per-account usage counters with atomic reservation.
 *
 * Semantics every adapter must keep (checked by the QuotaStore conformance suite):
 * - `reserve` adds `units` only when `used + units <= limit`, atomically: 50 concurrent
 *   reservations of 1 unit at 24 of 25 used grant exactly one, from any number of processes.
 * - `release` gives back units of a reservation whose request failed; the counter never goes below 0.
 * - `usage` returns the units used in a period (0 for an unknown account or period).
 * - Counters of a period may expire some time after the period ends.
 * - Outages throw `ImagePipelineError` with code `STORAGE_UNAVAILABLE`.
 */
export interface QuotaStore {
  reserve(request: QuotaReserveRequest): Promise<QuotaReservation>;
  release(request: Omit<QuotaReserveRequest, "limit">): Promise<void>;
  usage(accountId: string, period: string): Promise<number>;
}
