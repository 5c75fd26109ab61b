/** Billing state of an account. */
export interface AccountRecord {
  id: string;
  /**
   * `true` once the account upgraded from the live trial: its live keys are no longer held to the
   * monthly trial quota.
   */
  upgraded: boolean;
}

/**
 * Account flags.
 *
 * - `get` returns `null` for an account never written (callers treat it as a trial account).
 * - `setUpgraded` creates or updates the account; idempotent.
 */
export interface AccountStore {
  get(accountId: string): Promise<AccountRecord | null>;
  setUpgraded(accountId: string, upgraded: boolean): Promise<AccountRecord>;
}
