import { createHash } from "node:crypto";
import type { ApiKeyRecord, KeyStore } from "@pixport/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/** The live store of the running test, for {@link KeyStoreConformanceOptions.extraTests}. */
export interface KeyStoreTestContext {
  /** The key store created for the current test (read it inside `it`). */
  readonly store: KeyStore;
}

/** Options of {@link describeKeyStoreConformance}. */
export interface KeyStoreConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Creates a fresh, empty key store; called before every test. */
  create: () => KeyStore | Promise<KeyStore>;
  /** Releases what `create` made; called after every test. */
  cleanup?: (store: KeyStore) => void | Promise<void>;
  /**
   * Opens a second, independent instance on the same backend as `store`, standing in for another
   * process (an admin CLI next to the server). Absent for process-local stores such as the memory
   * adapter, which skips the cross-instance tests: there is no other process to share with.
   */
  peer?: (store: KeyStore) => KeyStore | Promise<KeyStore>;
  /** Adapter-specific tests that run inside the suite with the same fresh store per test. */
  extraTests?: (context: KeyStoreTestContext) => void;
}

/** A complete key record whose `hash` is the SHA-256 of a made-up key derived from `seed`. */
export function conformanceKeyRecord(seed: number, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const key = `test_conformance${seed}`;
  return {
    id: `key_${seed}`,
    hash: createHash("sha256").update(key).digest("hex"),
    displayPrefix: key.slice(0, 9),
    kind: "test",
    accountId: "acct_1",
    createdAt: "2026-01-01T00:00:00.000Z",
    ...overrides,
  };
}

function byId(records: readonly ApiKeyRecord[]): ApiKeyRecord[] {
  return [...records].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Runs the KeyStore conformance suite: every semantic stated in the `KeyStore` port TSDoc
 * (`findByHash` absence, unique `hash` and `id`, `list` completeness) plus copy-in/copy-out and
 * concurrent inserts. Each test gets a fresh store from `create`.
 *
 * @example
 * ```ts
 * describeKeyStoreConformance({ name: "memory", create: () => createMemoryKeyStore() });
 * ```
 */
export function describeKeyStoreConformance(options: KeyStoreConformanceOptions): void {
  describe(`KeyStore conformance: ${options.name}`, () => {
    let current: KeyStore | undefined;
    const context: KeyStoreTestContext = {
      get store() {
        if (current === undefined) throw new Error("The key store exists only while a test runs.");
        return current;
      },
    };

    beforeEach(async () => {
      current = await options.create();
    });
    afterEach(async () => {
      if (current !== undefined) await options.cleanup?.(current);
      current = undefined;
    });

    insertAndFindTests(context);
    raceCopyAndUpdateTests(context, options);

    options.extraTests?.(context);
  });
}

/** Inserting, finding, listing and refusing duplicates. */
function insertAndFindTests(context: KeyStoreTestContext): void {
  it("starts empty and returns null for an unknown hash", async () => {
    const { store } = context;
    expect(await store.list()).toEqual([]);
    expect(await store.findByHash(conformanceKeyRecord(1).hash)).toBeNull();
    expect(await store.findByHash("")).toBeNull();
  });

  it("finds an inserted key by its hash, every field intact", async () => {
    const { store } = context;
    const plain = conformanceKeyRecord(1);
    const custom = conformanceKeyRecord(2, { kind: "live", rateLimitPerMinute: 600, revoked: true });
    const cleared = conformanceKeyRecord(3, { rateLimitPerMinute: null, revoked: false });
    for (const record of [plain, custom, cleared]) await store.insert(record);
    expect(await store.findByHash(plain.hash)).toEqual(plain);
    expect(await store.findByHash(custom.hash)).toEqual(custom);
    expect(await store.findByHash(cleared.hash)).toEqual(cleared);
    expect(await store.findByHash(conformanceKeyRecord(4).hash)).toBeNull();
  });

  it("lists every key", async () => {
    const { store } = context;
    const records = Array.from({ length: 12 }, (_, index) =>
      conformanceKeyRecord(index, {
        accountId: `acct_${index % 3}`,
        kind: index % 2 === 0 ? "test" : "live",
      }),
    );
    for (const record of records) await store.insert(record);
    expect(byId(await store.list())).toEqual(byId(records));
  });

  it("rejects a duplicate hash and changes nothing", async () => {
    const { store } = context;
    const first = conformanceKeyRecord(1);
    await store.insert(first);
    await expect(store.insert({ ...first, id: "key_other", accountId: "acct_2" })).rejects.toThrow();
    expect(await store.findByHash(first.hash)).toEqual(first);
    expect(await store.list()).toEqual([first]);
  });

  it("rejects a duplicate id and changes nothing", async () => {
    const { store } = context;
    const first = conformanceKeyRecord(1);
    await store.insert(first);
    const sameId = conformanceKeyRecord(2, { id: first.id });
    await expect(store.insert(sameId)).rejects.toThrow();
    expect(await store.findByHash(sameId.hash)).toBeNull();
    expect(await store.list()).toEqual([first]);
  });

  it("keeps every one of many concurrent inserts", async () => {
    const { store } = context;
    const records = Array.from({ length: 20 }, (_, index) => conformanceKeyRecord(index));
    await Promise.all(records.map((record) => store.insert(record)));
    expect(byId(await store.list())).toEqual(byId(records));
    for (const record of records) expect(await store.findByHash(record.hash)).toEqual(record);
  });
}

/** Concurrent inserts of one hash, copies in and out, and updates by id. */
function raceCopyAndUpdateTests(context: KeyStoreTestContext, options: KeyStoreConformanceOptions): void {
  it("accepts exactly one of concurrent inserts of the same hash", async () => {
    const { store } = context;
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, (_, index) =>
        store.insert(conformanceKeyRecord(1, { id: `key_race_${index}` })),
      ),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    expect(await store.list()).toHaveLength(1);
  });

  it("is not affected by mutating the inserted record or any returned record", async () => {
    const { store } = context;
    const original = conformanceKeyRecord(1);
    const input = { ...original };
    await store.insert(input);
    input.revoked = true;
    input.accountId = "acct_evil";
    const found = await store.findByHash(original.hash);
    if (found !== null) found.revoked = true;
    const listed = await store.list();
    if (listed[0] !== undefined) listed[0].kind = "live";
    listed.push(conformanceKeyRecord(9));
    expect(await store.findByHash(original.hash)).toEqual(original);
    expect(await store.list()).toEqual([original]);
  });

  it.skipIf(options.peer === undefined)("shows an insert to another instance's next read", async () => {
    const { store } = context;
    const other = await options.peer?.(store);
    if (other === undefined) return;
    expect(await other.findByHash(conformanceKeyRecord(1).hash)).toBeNull();
    await store.insert(conformanceKeyRecord(1));
    expect(await other.findByHash(conformanceKeyRecord(1).hash)).toEqual(conformanceKeyRecord(1));
    await other.insert(conformanceKeyRecord(2));
    expect(byId(await store.list())).toEqual([conformanceKeyRecord(1), conformanceKeyRecord(2)]);
    await expect(store.insert(conformanceKeyRecord(2, { id: "key_other" }))).rejects.toThrow();
  });

  it("updates the rate-limit override and revocation of a key by id, and nothing else", async () => {
    const { store } = context;
    const original = conformanceKeyRecord(1);
    await store.insert(original);
    await store.insert(conformanceKeyRecord(2));
    expect(await store.update("key_unknown", { revoked: true })).toBeNull();
    const limited = await store.update(original.id, { rateLimitPerMinute: 500 });
    expect(limited).toEqual({ ...original, rateLimitPerMinute: 500 });
    expect(await store.findByHash(original.hash)).toEqual({ ...original, rateLimitPerMinute: 500 });
    const revoked = await store.update(original.id, { revoked: true });
    expect(revoked).toMatchObject({ rateLimitPerMinute: 500, revoked: true });
    const cleared = await store.update(original.id, { rateLimitPerMinute: null });
    expect(cleared?.rateLimitPerMinute ?? null).toBeNull();
    expect(cleared?.revoked).toBe(true);
    expect(await store.findByHash(conformanceKeyRecord(2).hash)).toEqual(conformanceKeyRecord(2));
    if (options.peer !== undefined) {
      const other = await options.peer(store);
      expect((await other.findByHash(original.hash))?.revoked).toBe(true);
    }
  });
}
