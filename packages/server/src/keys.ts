import { type AccountStore, type CreatedKey, createApiKey, type KeyStore } from "@pixport/core";

export { type CreatedKey, createApiKey } from "@pixport/core";

/** The keys made on a server's first start. */
export interface InitialKeys {
  /** A live key of the `default` account, which is upgraded: no monthly cap (the operator owns the server). */
  live: CreatedKey;
  /** A test key of the same account: 10 requests a minute, marked images, 90-day retention. */
  test: CreatedKey;
}

/**
 * On first start with no keys, upgrades the `default` account and creates one live and one test
 * key for it; returns them, or `null` when keys already exist.
 */
export async function ensureInitialKeys(keys: KeyStore, accounts: AccountStore): Promise<InitialKeys | null> {
  if ((await keys.list()).length > 0) return null;
  await accounts.setUpgraded("default", true);
  const live = await createApiKey(keys, { kind: "live", accountId: "default" });
  const test = await createApiKey(keys, { kind: "test", accountId: "default" });
  return { live, test };
}
