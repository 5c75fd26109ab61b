/** The list groups of the ImageRepository suite: owner scoping, order, cursors, page walks, retention. */
import type { ImagePage } from "@pixport/core";
import { describe, expect, it } from "vitest";
import type { ImageRepositoryTestContext } from "./image-repository.js";
import {
  at,
  conformanceImageId,
  conformanceImageRecord,
  ids,
  insertOwnedSet,
  shuffled,
} from "./image-repository-records.js";

export function describeList(context: ImageRepositoryTestContext): void {
  describe("list", () => {
    listScopeAndOrder(context);
    listPageWalks(context);
    listCursors(context);
  });
}

function listScopeAndOrder(context: ImageRepositoryTestContext): void {
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
}

function listPageWalks(context: ImageRepositoryTestContext): void {
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
}

function listCursors(context: ImageRepositoryTestContext): void {
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
    expect(await repository.list({ accountId: "acct_1", stage: "test", from: gone, take: 10 })).toBeNull();
  });
}

export function describeListCreatedBefore(context: ImageRepositoryTestContext): void {
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
      expect(await repository.listCreatedBefore({ stage: "test", createdBefore: at(0), limit: 100 })).toEqual(
        [],
      );
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
}
