import {
  type ApiKeyRecord,
  generateApiKey,
  generateKeyId,
  hashApiKey,
  type KeyKind,
  type KeyStore,
} from "@pixport/core";

/** A key as created: the secret is returned once and never stored. */
export interface CreatedKey {
  key: string;
  record: ApiKeyRecord;
}

/** Creates a key for an account, storing only its SHA-256 hash. */
export async function createApiKey(
  keys: KeyStore,
  options: { kind: KeyKind; accountId: string; now?: Date },
): Promise<CreatedKey> {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(options.accountId)) {
    throw new TypeError(
      `Expected an account name of 1..64 letters, digits, '.', '_' or '-' for account, received ${JSON.stringify(options.accountId)}`,
    );
  }
  const key = generateApiKey(options.kind);
  const record: ApiKeyRecord = {
    id: generateKeyId(),
    hash: await hashApiKey(key),
    displayPrefix: key.slice(0, options.kind.length + 5),
    kind: options.kind,
    accountId: options.accountId,
    createdAt: (options.now ?? new Date()).toISOString(),
  };
  await keys.insert(record);
  return { key, record };
}

/** On first start with no keys, creates one test key for the `default` account and returns it. */
export async function ensureInitialKey(keys: KeyStore): Promise<CreatedKey | null> {
  if ((await keys.list()).length > 0) return null;
  return createApiKey(keys, { kind: "test", accountId: "default" });
}
