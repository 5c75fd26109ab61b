import type { AccountRecord, AccountStore } from "../ports/account-store.js";

/**
 * An AccountStore in process memory.
 *
 * @example
 * ```ts
 * const accounts = createMemoryAccountStore();
 * await accounts.setUpgraded("acme", true);
 * ```
 */
export function createMemoryAccountStore(): AccountStore {
  const accounts = new Map<string, AccountRecord>();
  return {
    async get(accountId) {
      const account = accounts.get(accountId);
      return account === undefined ? null : { ...account };
    },
    async setUpgraded(accountId, upgraded) {
      const account = { id: accountId, upgraded };
      accounts.set(accountId, account);
      return { ...account };
    },
  };
}
