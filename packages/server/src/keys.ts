import { type CreatedKey, createApiKey, type KeyStore } from "@pixport/core";

export { type CreatedKey, createApiKey } from "@pixport/core";

/** On first start with no keys, creates one test key for the `default` account and returns it. */
export async function ensureInitialKey(keys: KeyStore): Promise<CreatedKey | null> {
  if ((await keys.list()).length > 0) return null;
  return createApiKey(keys, { kind: "test", accountId: "default" });
}
