import type { AccountRecord, AccountStore, ApiKeyRecord, KeyStore } from "@pixport/core";
import { definedFields } from "@pixport/core/adapter-kit";
import {
  createCaller,
  defineScript,
  parseRedisOptions,
  type RedisAdapterOptions,
  redisAdapterOptionsSchema,
  script,
} from "./client.js";

// Insert a key record only when neither its hash nor its id exists yet, in one step.
const INSERT_KEY = `
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
`;

// Merge a patch into a stored record in one step (cjson ships with Redis' Lua).
const UPDATE_KEY = `
local current = redis.call('GET', KEYS[1])
if not current then return false end
local record = cjson.decode(current)
for field, value in pairs(cjson.decode(ARGV[1])) do
  if value == cjson.null then record[field] = nil else record[field] = value end
end
local encoded = cjson.encode(record)
redis.call('SET', KEYS[1], encoded)
return encoded
`;

/**
 * A KeyStore on Redis: `{prefix}key:{hash}` holds the record as JSON (only the SHA-256 of the key is
 * stored), `{prefix}key-id:{id}` guards id uniqueness, `{prefix}keys` lists every hash. Every node
 * sees a new or revoked key on its next request.
 *
 * @example
 * ```ts
 * const keys = createRedisKeyStore({ client: new Redis(url, { enableOfflineQueue: false }) });
 * const { key } = await createApiKey(keys, { kind: "live", accountId: "acme" });
 * ```
 */
export function createRedisKeyStore(input: RedisAdapterOptions): KeyStore {
  const options = parseRedisOptions(redisAdapterOptionsSchema, input, "createRedisKeyStore");
  const prefix = options.prefix;
  const call = createCaller(options);
  defineScript(options.client, "pixportInsertKey", 3, INSERT_KEY);
  const insert = script(options.client, "pixportInsertKey");
  defineScript(options.client, "pixportUpdateKey", 1, UPDATE_KEY);
  const updateKey = script(options.client, "pixportUpdateKey");
  const parse = (text: string | null): ApiKeyRecord | null =>
    text === null ? null : (JSON.parse(text) as ApiKeyRecord);
  return {
    findByHash(hash) {
      return call("key look-up", async () => parse(await options.client.get(`${prefix}key:${hash}`)));
    },
    insert(record) {
      return call("key insert", async () => {
        const inserted = await insert(
          `${prefix}key:${record.hash}`,
          `${prefix}key-id:${record.id}`,
          `${prefix}keys`,
          JSON.stringify(record),
          record.hash,
        );
        if (inserted !== 1)
          throw new TypeError(`A key with id ${record.id} or the same hash already exists.`);
      });
    },
    update(id, patch) {
      return call("key update", async () => {
        const hash = await options.client.get(`${prefix}key-id:${id}`);
        if (hash === null) return null;
        const updated = await updateKey(`${prefix}key:${hash}`, JSON.stringify(definedFields(patch)));
        return parse(updated as string | null);
      });
    },
    list() {
      return call("key list", async () => {
        const hashes = await options.client.smembers(`${prefix}keys`);
        if (hashes.length === 0) return [];
        const values = await options.client.mget(hashes.map((hash) => `${prefix}key:${hash}`));
        return values.map(parse).filter((record): record is ApiKeyRecord => record !== null);
      });
    },
  };
}

/**
 * An AccountStore on Redis: `{prefix}account:{id}` holds the account as JSON.
 *
 * @example
 * ```ts
 * const accounts = createRedisAccountStore({ client: new Redis(url, { enableOfflineQueue: false }) });
 * await accounts.setUpgraded("acme", true);
 * ```
 */
export function createRedisAccountStore(input: RedisAdapterOptions): AccountStore {
  const options = parseRedisOptions(redisAdapterOptionsSchema, input, "createRedisAccountStore");
  const prefix = options.prefix;
  const call = createCaller(options);
  return {
    get(accountId) {
      return call("account look-up", async () => {
        const text = await options.client.get(`${prefix}account:${accountId}`);
        return text === null ? null : (JSON.parse(text) as AccountRecord);
      });
    },
    setUpgraded(accountId, upgraded) {
      return call("account update", async () => {
        const account: AccountRecord = { id: accountId, upgraded };
        await options.client.set(`${prefix}account:${accountId}`, JSON.stringify(account));
        return account;
      });
    },
  };
}
