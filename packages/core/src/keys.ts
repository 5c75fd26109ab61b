import { generateApiKey, generateKeyId, hashApiKey } from "./ids.js";
import type { KeyKind } from "./image.js";
import type { ApiKeyRecord, KeyStore } from "./ports/key-store.js";

/** A key as created: the secret is returned once and never stored. */
export interface CreatedKey {
  key: string;
  record: ApiKeyRecord;
}

/**
 * Creates a key for an account in any {@link KeyStore}, storing only its SHA-256 hash. The secret
 * (`test_` or `live_` + 32 base62 characters) is in the result and nowhere else.
 *
 * @example
 * ```ts
 * const keys = createMemoryKeyStore();
 * const { key } = await createApiKey(keys, { kind: "live", accountId: "acme" });
 * const caller = await pipeline.authenticate(key);
 * ```
 */
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
