import type { ImagePage, ImageRecord, ImageRepository, KeyKind } from "@pixport/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/** The live repository of the running test, for {@link ImageRepositoryConformanceOptions.extraTests}. */
export interface ImageRepositoryTestContext {
  /** The repository created for the current test (read it inside `it`). */
  readonly repository: ImageRepository;
}

/** Options of {@link describeImageRepositoryConformance}. */
export interface ImageRepositoryConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Creates a fresh, empty repository; called before every test. */
  create: () => ImageRepository | Promise<ImageRepository>;
  /** Releases what `create` made; called after every test. */
  cleanup?: (repository: ImageRepository) => void | Promise<void>;
  /**
   * Opens a second, independent instance on the same backend as `repository`, standing in for
   * another process. Absent for process-local repositories such as the memory adapter, which skips
   * the cross-instance tests: there is no other process to share with.
   */
  peer?: (repository: ImageRepository) => ImageRepository | Promise<ImageRepository>;
  /** Adapter-specific tests that run inside the suite with the same fresh repository per test. */
  extraTests?: (context: ImageRepositoryTestContext) => void;
}

const BASE_TIME = Date.parse("2026-01-01T00:00:00.000Z");

/** An image id of the accepted shape (`image_` + 24 lowercase letters or digits) built from a number. */
export function conformanceImageId(value: number, prefix = "t"): string {
  return `image_${prefix}${String(value).padStart(23, "0")}`;
}

/** A complete, valid record with predictable fields; `overrides` win. */
export function conformanceImageRecord(overrides: Partial<ImageRecord> & { id: string }): ImageRecord {
  return {
    accountId: "acct_1",
    stage: "test",
    name: `${overrides.id}.png`,
    format: "png",
    width: 10,
    height: 20,
    size: 300,
    createdAt: new Date(BASE_TIME).toISOString(),
    blobKey: `images/${overrides.id}.png`,
    url: null,
    ...overrides,
  };
}

function at(seconds: number): string {
  return new Date(BASE_TIME + seconds * 1000).toISOString();
}

function ids(records: readonly ImageRecord[]): string[] {
  return records.map((record) => record.id);
}

/** Fisher-Yates with a fixed LCG so insertion order is scrambled the same way on every run. */
function shuffled<T>(values: readonly T[]): T[] {
  const result = [...values];
  let seed = 42;
  for (let index = result.length - 1; index > 0; index -= 1) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const other = seed % (index + 1);
    [result[index], result[other]] = [result[other] as T, result[index] as T];
  }
  return result;
}

/**
 * Runs the ImageRepository conformance suite: every semantic stated in the `ImageRepository` port
 * TSDoc (insert/get/update/delete, owner scoping, total order, inclusive cursors, page walks in
 * both directions, retention queries) plus copy-in/copy-out of records. Each test gets a fresh
 * repository from `create`.
 *
 * @example
 * ```ts
 * describeImageRepositoryConformance({ name: "memory", create: () => createMemoryImageRepository() });
 * ```
 */
export function describeImageRepositoryConformance(options: ImageRepositoryConformanceOptions): void {
  describe(`ImageRepository conformance: ${options.name}`, () => {
    let current: ImageRepository | undefined;
    const context: ImageRepositoryTestContext = {
      get repository() {
        if (current === undefined) throw new Error("The repository exists only while a test runs.");
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

    /** 25 records of one owner with distinct instants and a few ties, inserted in scrambled order. */
    async function insertOwnedSet(
      repository: ImageRepository,
      stage: KeyKind = "test",
    ): Promise<ImageRecord[]> {
      const records = Array.from({ length: 25 }, (_, index) =>
        conformanceImageRecord({
          id: conformanceImageId(index, stage === "test" ? "t" : "l"),
          stage,
          // Every fifth record shares its instant with the previous one, to exercise the tie rule.
          createdAt: at(index % 5 === 4 ? index - 1 : index),
        }),
      );
      for (const record of shuffled(records)) await repository.insert(record);
      return [...records].sort((a, b) =>
        a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : -1,
      );
    }

    describe("insert and get", () => {
      it("returns an inserted record field for field", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({
          id: conformanceImageId(1),
          url: "https://cdn.example/x.png",
        });
        await repository.insert(record);
        expect(await repository.get(record.id)).toEqual(record);
      });

      it("returns null for an unknown id", async () => {
        const { repository } = context;
        expect(await repository.get(conformanceImageId(404))).toBeNull();
        expect(await repository.get("image_DOESNOTEXIST0000000000000")).toBeNull();
        expect(await repository.get("../../etc/passwd")).toBeNull();
      });

      it("rejects a duplicate id and changes nothing", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(2) });
        await repository.insert(record);
        await expect(
          repository.insert({ ...record, name: "other.png", accountId: "acct_2", createdAt: at(99) }),
        ).rejects.toThrow();
        expect(await repository.get(record.id)).toEqual(record);
        expect((await repository.list({ accountId: "acct_1", stage: "test", take: 100 }))?.items).toEqual([
          record,
        ]);
        expect((await repository.list({ accountId: "acct_2", stage: "test", take: 100 }))?.items).toEqual([]);
      });
    });

    describe("update", () => {
      it("applies the patch and returns the new record", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(3) });
        await repository.insert(record);
        const published = { ...record, url: "https://cdn.example/images/3.png" };
        expect(await repository.update(record.id, { url: published.url })).toEqual(published);
        expect(await repository.get(record.id)).toEqual(published);
        expect(await repository.update(record.id, { url: null })).toEqual(record);
        expect(await repository.get(record.id)).toEqual(record);
      });

      it("leaves fields that the patch omits or sets to undefined unchanged", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({
          id: conformanceImageId(4),
          url: "https://cdn.example/4.png",
        });
        await repository.insert(record);
        expect(await repository.update(record.id, {})).toEqual(record);
        expect(await repository.update(record.id, { url: undefined })).toEqual(record);
        expect(await repository.get(record.id)).toEqual(record);
      });

      it("keeps frames and facts: stored at insert, added by a patch, untouched by a url patch", async () => {
        const { repository } = context;
        const facts = {
          hasAlpha: true,
          frames: 3,
          dominantColor: "#12ab9f",
          thumbhash: "1QcSHQRnh493V4dIh4eXh1h4kJUI",
          blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj",
        };
        const animated = conformanceImageRecord({
          id: conformanceImageId(40),
          format: "gif",
          frames: 3,
          facts,
        });
        await repository.insert(animated);
        expect(await repository.get(animated.id)).toEqual(animated);
        const old = conformanceImageRecord({ id: conformanceImageId(41) });
        await repository.insert(old);
        const still = { ...facts, hasAlpha: false, frames: 1 };
        expect(await repository.update(old.id, { facts: still })).toEqual({ ...old, facts: still });
        const url = "https://cdn.example/images/41.png";
        expect(await repository.update(old.id, { url })).toEqual({ ...old, facts: still, url });
        expect(await repository.get(old.id)).toEqual({ ...old, facts: still, url });
      });

      it("returns null for an unknown id and does not create it", async () => {
        const { repository } = context;
        const id = conformanceImageId(5);
        expect(await repository.update(id, { url: "https://cdn.example/5.png" })).toBeNull();
        expect(await repository.get(id)).toBeNull();
        expect((await repository.list({ accountId: "acct_1", stage: "test", take: 100 }))?.items).toEqual([]);
      });

      it("shows the update in later lists", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(6) });
        await repository.insert(record);
        await repository.update(record.id, { url: "https://cdn.example/6.png" });
        const page = await repository.list({ accountId: "acct_1", stage: "test", take: 10 });
        expect(page?.items).toEqual([{ ...record, url: "https://cdn.example/6.png" }]);
      });
    });

    describe("delete", () => {
      it("returns true once, then false", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(7) });
        await repository.insert(record);
        expect(await repository.delete(record.id)).toBe(true);
        expect(await repository.get(record.id)).toBeNull();
        expect(await repository.delete(record.id)).toBe(false);
        expect(await repository.delete(conformanceImageId(8))).toBe(false);
        expect((await repository.list({ accountId: "acct_1", stage: "test", take: 100 }))?.items).toEqual([]);
      });

      it("deletes only the given record", async () => {
        const { repository } = context;
        const kept = conformanceImageRecord({ id: conformanceImageId(9), createdAt: at(1) });
        const removed = conformanceImageRecord({ id: conformanceImageId(10), createdAt: at(2) });
        await repository.insert(kept);
        await repository.insert(removed);
        await repository.delete(removed.id);
        expect((await repository.list({ accountId: "acct_1", stage: "test", take: 100 }))?.items).toEqual([
          kept,
        ]);
      });

      it("allows inserting the id again after a delete", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(11) });
        await repository.insert(record);
        await repository.delete(record.id);
        const again = { ...record, name: "again.png" };
        await repository.insert(again);
        expect(await repository.get(record.id)).toEqual(again);
      });
    });

    describe("list", () => {
      it("returns only the owner's records: other accounts and the other stage are excluded", async () => {
        const { repository } = context;
        const mine = conformanceImageRecord({ id: conformanceImageId(20), createdAt: at(1) });
        const otherAccount = conformanceImageRecord({
          id: conformanceImageId(21),
          accountId: "acct_2",
          createdAt: at(2),
        });
        const otherStage = conformanceImageRecord({
          id: conformanceImageId(22),
          stage: "live",
          createdAt: at(3),
        });
        for (const record of [mine, otherAccount, otherStage]) await repository.insert(record);
        expect(await repository.list({ accountId: "acct_1", stage: "test", take: 100 })).toEqual({
          items: [mine],
          next: null,
          previous: null,
        });
        expect((await repository.list({ accountId: "acct_2", stage: "test", take: 100 }))?.items).toEqual([
          otherAccount,
        ]);
        expect((await repository.list({ accountId: "acct_1", stage: "live", take: 100 }))?.items).toEqual([
          otherStage,
        ]);
        expect(await repository.list({ accountId: "acct_3", stage: "live", take: 100 })).toEqual({
          items: [],
          next: null,
          previous: null,
        });
      });

      it("orders newest first, ties by id descending", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const page = await repository.list({ accountId: "acct_1", stage: "test", take: 100 });
        expect(page?.items).toEqual(expected);
        expect(page?.next).toBeNull();
        expect(page?.previous).toBeNull();
      });

      it("orders records with an identical createdAt by id descending", async () => {
        const { repository } = context;
        const same = ["k", "b", "z", "a", "m"].map((letter) =>
          conformanceImageRecord({ id: `image_${letter.repeat(24)}`, createdAt: at(0) }),
        );
        for (const record of same) await repository.insert(record);
        const page = await repository.list({ accountId: "acct_1", stage: "test", take: 100 });
        expect(ids(page?.items ?? [])).toEqual(
          ["z", "m", "k", "b", "a"].map((letter) => `image_${letter.repeat(24)}`),
        );
      });

      it("treats from as inclusive", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const from = expected[3]?.id;
        const page = await repository.list({ accountId: "acct_1", stage: "test", from, take: 5 });
        expect(ids(page?.items ?? [])).toEqual(ids(expected.slice(3, 8)));
        expect(page?.next).toBe(expected[8]?.id);
        expect(page?.previous).toBe(expected[0]?.id);
      });

      it("supports take 1 and take 100", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const one = await repository.list({ accountId: "acct_1", stage: "test", take: 1 });
        expect(one).toEqual({ items: [expected[0]], next: expected[1]?.id, previous: null });
        const last = await repository.list({
          accountId: "acct_1",
          stage: "test",
          from: expected[24]?.id,
          take: 1,
        });
        expect(last).toEqual({ items: [expected[24]], next: null, previous: expected[23]?.id });
        const all = await repository.list({ accountId: "acct_1", stage: "test", take: 100 });
        expect(all).toEqual({ items: expected, next: null, previous: null });
      });

      it("walks the whole set forward with next and back with previous, consistently", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const take = 7;
        const forward: ImagePage[] = [];
        let cursor: string | undefined;
        do {
          const page = await repository.list({ accountId: "acct_1", stage: "test", from: cursor, take });
          expect(page).not.toBeNull();
          if (page === null) break;
          forward.push(page);
          cursor = page.next ?? undefined;
        } while (cursor !== undefined && forward.length <= 25);
        expect(forward.map((page) => page.items.length)).toEqual([7, 7, 7, 4]);
        expect(forward.flatMap((page) => ids(page.items))).toEqual(ids(expected));
        expect(forward.map((page) => page.previous)).toEqual([
          null,
          expected[0]?.id,
          expected[7]?.id,
          expected[14]?.id,
        ]);

        const backward: ImagePage[] = [forward[forward.length - 1] as ImagePage];
        let previous = backward[0]?.previous ?? null;
        while (previous !== null && backward.length <= 25) {
          const page = await repository.list({ accountId: "acct_1", stage: "test", from: previous, take });
          expect(page).not.toBeNull();
          if (page === null) break;
          backward.unshift(page);
          previous = page.previous;
        }
        expect(backward).toEqual(forward);
      });

      it("gives previous = the first id when fewer than take items come before from", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const page = await repository.list({
          accountId: "acct_1",
          stage: "test",
          from: expected[2]?.id,
          take: 7,
        });
        expect(page?.previous).toBe(expected[0]?.id);
        const first = await repository.list({
          accountId: "acct_1",
          stage: "test",
          from: page?.previous ?? "",
          take: 7,
        });
        expect(first?.previous).toBeNull();
        expect(ids(first?.items ?? [])).toEqual(ids(expected.slice(0, 7)));
      });

      it("returns null when from is unknown, another account's or the other stage's image", async () => {
        const { repository } = context;
        await insertOwnedSet(repository);
        const foreign = conformanceImageRecord({ id: conformanceImageId(900), accountId: "acct_2" });
        const otherStage = conformanceImageRecord({ id: conformanceImageId(901), stage: "live" });
        await repository.insert(foreign);
        await repository.insert(otherStage);
        const query = { accountId: "acct_1", stage: "test" as const, take: 10 };
        expect(await repository.list({ ...query, from: conformanceImageId(999) })).toBeNull();
        expect(await repository.list({ ...query, from: foreign.id })).toBeNull();
        expect(await repository.list({ ...query, from: otherStage.id })).toBeNull();
      });

      it("returns null when from was deleted", async () => {
        const { repository } = context;
        const expected = await insertOwnedSet(repository);
        const gone = expected[5]?.id ?? "";
        await repository.delete(gone);
        expect(
          await repository.list({ accountId: "acct_1", stage: "test", from: gone, take: 10 }),
        ).toBeNull();
      });
    });

    describe("listCreatedBefore", () => {
      it("returns records of one stage strictly before the instant, oldest first, up to limit", async () => {
        const { repository } = context;
        const records = [
          conformanceImageRecord({ id: conformanceImageId(30), createdAt: at(30) }),
          conformanceImageRecord({ id: conformanceImageId(31), createdAt: at(10), accountId: "acct_2" }),
          conformanceImageRecord({ id: conformanceImageId(32), createdAt: at(20) }),
          conformanceImageRecord({ id: conformanceImageId(33), createdAt: at(40) }),
          conformanceImageRecord({ id: conformanceImageId(34), createdAt: at(5), stage: "live" }),
          conformanceImageRecord({ id: conformanceImageId(35), createdAt: at(0) }),
        ];
        for (const record of shuffled(records)) await repository.insert(record);
        const before = await repository.listCreatedBefore({
          stage: "test",
          createdBefore: at(30),
          limit: 100,
        });
        expect(ids(before)).toEqual([conformanceImageId(35), conformanceImageId(31), conformanceImageId(32)]);
        expect(before[1]).toEqual(records[1]);
        const limited = await repository.listCreatedBefore({
          stage: "test",
          createdBefore: at(30),
          limit: 2,
        });
        expect(ids(limited)).toEqual([conformanceImageId(35), conformanceImageId(31)]);
        const live = await repository.listCreatedBefore({ stage: "live", createdBefore: at(30), limit: 100 });
        expect(ids(live)).toEqual([conformanceImageId(34)]);
        expect(
          await repository.listCreatedBefore({ stage: "test", createdBefore: at(0), limit: 100 }),
        ).toEqual([]);
      });

      it("no longer returns deleted records", async () => {
        const { repository } = context;
        const record = conformanceImageRecord({ id: conformanceImageId(36), createdAt: at(1) });
        await repository.insert(record);
        await repository.delete(record.id);
        expect(
          await repository.listCreatedBefore({ stage: "test", createdBefore: at(100), limit: 10 }),
        ).toEqual([]);
      });
    });

    describe("copies", () => {
      it("is not affected by mutating the inserted record or any returned record", async () => {
        const { repository } = context;
        const original = conformanceImageRecord({ id: conformanceImageId(40), createdAt: at(1) });
        const input = { ...original };
        await repository.insert(input);
        input.name = "mutated-input.png";
        input.createdAt = at(500);

        const got = await repository.get(original.id);
        if (got !== null) got.name = "mutated-get.png";
        const page = await repository.list({ accountId: "acct_1", stage: "test", take: 10 });
        const listed = page?.items[0];
        if (listed !== undefined) listed.url = "https://evil.example/";
        page?.items.pop();
        const expired = await repository.listCreatedBefore({
          stage: "test",
          createdBefore: at(100),
          limit: 10,
        });
        const old = expired[0];
        if (old !== undefined) old.accountId = "acct_evil";
        const updated = await repository.update(original.id, {});
        if (updated !== null) updated.size = 1;

        expect(await repository.get(original.id)).toEqual(original);
        expect((await repository.list({ accountId: "acct_1", stage: "test", take: 10 }))?.items).toEqual([
          original,
        ]);
        expect(
          await repository.listCreatedBefore({ stage: "test", createdBefore: at(100), limit: 10 }),
        ).toEqual([original]);
      });
    });

    describe("other processes", () => {
      const peer = options.peer;
      it.skipIf(peer === undefined)("shows every write to another instance's next read", async () => {
        const { repository } = context;
        const other = await peer?.(repository);
        if (other === undefined) return;
        const owner = { accountId: "acct_1", stage: "test" as const, take: 100 };
        expect((await other.list(owner))?.items).toEqual([]);
        const first = conformanceImageRecord({ id: conformanceImageId(50), createdAt: at(1) });
        const second = conformanceImageRecord({ id: conformanceImageId(51), createdAt: at(2) });
        await repository.insert(first);
        expect(await other.get(first.id)).toEqual(first);
        await other.insert(second);
        expect((await repository.list(owner))?.items).toEqual([second, first]);
        await expect(other.insert({ ...first, name: "again.png" })).rejects.toThrow();
        const published = await other.update(first.id, { url: "https://cdn.example/50.png" });
        expect(await repository.get(first.id)).toEqual(published);
        expect(
          await repository.listCreatedBefore({ stage: "test", createdBefore: at(10), limit: 10 }),
        ).toEqual([published, second]);
        expect(await repository.delete(first.id)).toBe(true);
        expect(await other.get(first.id)).toBeNull();
        expect(await other.delete(first.id)).toBe(false);
        expect((await other.list(owner))?.items).toEqual([second]);
      });
    });

    options.extraTests?.(context);
  });
}
