import type { ApiKeyRecord, KeyStore } from "../ports/key-store.js";

/**
 * A KeyStore in process memory (tests, library use, single-process demos).
 *
 * @example
 * ```ts
 * const keys = createMemoryKeyStore();
 * const { key } = await createApiKey(keys, { kind: "test", accountId: "demo" });
 * ```
 */
export function createMemoryKeyStore(initial: readonly ApiKeyRecord[] = []): KeyStore {
  const byHash = new Map<string, ApiKeyRecord>(initial.map((record) => [record.hash, { ...record }]));
  return {
    async findByHash(hash) {
      const record = byHash.get(hash);
      return record === undefined ? null : { ...record };
    },
    async insert(record) {
      if (byHash.has(record.hash) || [...byHash.values()].some((existing) => existing.id === record.id)) {
        throw new Error(`A key with id ${record.id} or the same hash already exists.`);
      }
      byHash.set(record.hash, { ...record });
    },
    async list() {
      return [...byHash.values()].map((record) => ({ ...record }));
    },
    async update(id, patch) {
      const record = [...byHash.values()].find((candidate) => candidate.id === id);
      if (record === undefined) return null;
      const updated = { ...record, ...definedFields(patch) };
      byHash.set(record.hash, updated);
      return { ...updated };
    },
  };
}

/** The patch without `undefined` members (an absent field leaves the record's value alone). */
export function definedFields<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)) as Partial<T>;
}
