/** The write groups of the ImageRepository suite: insert, get, update, delete, copies and peers. */
import { describe, expect, it } from "vitest";
import type { ImageRepositoryConformanceOptions, ImageRepositoryTestContext } from "./image-repository.js";
import { at, conformanceImageId, conformanceImageRecord } from "./image-repository-records.js";

export function describeInsertAndGet(context: ImageRepositoryTestContext): void {
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
}

export function describeUpdate(context: ImageRepositoryTestContext): void {
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
}

export function describeDelete(context: ImageRepositoryTestContext): void {
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
}

export function describeCopies(context: ImageRepositoryTestContext): void {
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
}

export function describeOtherProcesses(
  context: ImageRepositoryTestContext,
  options: ImageRepositoryConformanceOptions,
): void {
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
      expect(await repository.listCreatedBefore({ stage: "test", createdBefore: at(10), limit: 10 })).toEqual(
        [published, second],
      );
      expect(await repository.delete(first.id)).toBe(true);
      expect(await other.get(first.id)).toBeNull();
      expect(await other.delete(first.id)).toBe(false);
      expect((await other.list(owner))?.items).toEqual([second]);
    });
  });
}
