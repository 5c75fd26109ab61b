/** The test groups of the BlobStore suite: listing, round trip, stat, absence, key validation, copies, concurrency, peers. */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type {
  BlobStoreConformanceCapabilities,
  BlobStoreConformanceOptions,
  BlobStoreTestContext,
} from "./blob-store.js";

/**
 * Keys every BlobStore must refuse with a `TypeError` (see `assertBlobKey`): traversal, absolute
 * paths, uppercase, empty, doubled or dot segments, characters outside the key alphabet.
 */
export const INVALID_BLOB_KEYS: readonly string[] = [
  "../x",
  "a/../../b",
  "a/..",
  "./x",
  "a/./b",
  "/x",
  "/etc/passwd",
  "Images/x.png",
  "images/X.png",
  "",
  "a//b",
  "//",
  "a\\b",
  "..\\x",
  "a\u0000b",
  "%2e%2e/x",
  " x",
  "x".repeat(513),
];

const PNG = "image/png";

/** The capabilities with the suite's defaults applied. */
export type ResolvedCapabilities = BlobStoreConformanceCapabilities & { keyAsPrefix: boolean; list: boolean };

function bytes(length: number, fill: number): Uint8Array {
  return new Uint8Array(length).fill(fill);
}

export function describeListing(context: BlobStoreTestContext, capabilities: ResolvedCapabilities): void {
  describe("list (optional)", () => {
    // Skipped only for stores that declare `list: false`: they are not swept for orphans.
    it.skipIf(!capabilities.list)(
      "lists the keys under a prefix with their write time, and no internal files",
      async () => {
        const { store } = context;
        expect(store.list).toBeTypeOf("function");
        if (store.list === undefined) return;
        const before = Date.now() - 5_000;
        await store.put("images/a.png", bytes(10, 1), { contentType: PNG });
        await store.put("images/b.webp", bytes(10, 2), {
          contentType: "image/webp",
          cacheControl: "no-cache",
        });
        await store.put("other/c.png", bytes(10, 3), { contentType: PNG });
        await store.delete("images/a.png");
        await store.put("images/d.png", bytes(10, 4), { contentType: PNG });
        const listed: { key: string; modifiedAt: Date }[] = [];
        for await (const entry of store.list("images/")) listed.push(entry);
        expect(listed.map((entry) => entry.key).sort()).toEqual(["images/b.webp", "images/d.png"]);
        for (const entry of listed) {
          expect(entry.modifiedAt).toBeInstanceOf(Date);
          expect(entry.modifiedAt.getTime()).toBeGreaterThan(before);
        }
        const none: string[] = [];
        for await (const entry of store.list("nothing/")) none.push(entry.key);
        expect(none).toEqual([]);
      },
    );
  });
}

export function describeRoundTrip(context: BlobStoreTestContext): void {
  describe("round trip", () => {
    it("stores and returns every byte value unchanged", async () => {
      const { store } = context;
      const data = Uint8Array.from({ length: 256 }, (_, index) => index);
      await store.put("bytes/all-values.bin", data, { contentType: "application/octet-stream" });
      const read = await store.get("bytes/all-values.bin");
      expect(read).toBeInstanceOf(Uint8Array);
      expect(Array.from(read ?? [])).toEqual(Array.from(data));
    });

    it("stores a 1 MB random buffer unchanged", async () => {
      const { store } = context;
      const data = new Uint8Array(randomBytes(1024 * 1024));
      await store.put("bytes/random.bin", data, { contentType: "application/octet-stream" });
      const read = await store.get("bytes/random.bin");
      expect(read?.byteLength).toBe(data.byteLength);
      expect(Buffer.from(read ?? new Uint8Array()).equals(Buffer.from(data))).toBe(true);
    });

    it("stores a cache write (durable: false) with the same read-after-write and overwrite", async () => {
      const { store } = context;
      const first = new Uint8Array(randomBytes(64 * 1024));
      const second = new Uint8Array(randomBytes(32 * 1024));
      await store.put("cache/v.jpg", first, { contentType: "image/jpeg" }, { durable: false });
      expect(Buffer.from((await store.get("cache/v.jpg")) ?? []).equals(Buffer.from(first))).toBe(true);
      await store.put("cache/v.jpg", second, { contentType: "image/jpeg" }, { durable: false });
      expect(Buffer.from((await store.get("cache/v.jpg")) ?? []).equals(Buffer.from(second))).toBe(true);
      expect(await store.stat("cache/v.jpg")).toEqual({
        size: second.byteLength,
        contentType: "image/jpeg",
      });
    });

    it("returns the same bytes for a background read (get's background option)", async () => {
      const { store } = context;
      const data = bytes(300, 5);
      await store.put("images/background.png", data, { contentType: PNG });
      const read = await store.get("images/background.png", { background: true });
      expect(Array.from(read ?? [])).toEqual(Array.from(data));
      expect(await store.get("images/missing.png", { background: true })).toBeNull();
    });

    it("stores an empty blob", async () => {
      const { store } = context;
      await store.put("empty.bin", new Uint8Array(), { contentType: "application/octet-stream" });
      expect(Array.from((await store.get("empty.bin")) ?? [1])).toEqual([]);
      expect(await store.stat("empty.bin")).toEqual({ size: 0, contentType: "application/octet-stream" });
    });

    it("overwrites the bytes and the metadata of an existing key", async () => {
      const { store } = context;
      await store.put("images/a.png", bytes(1000, 1), { contentType: PNG, cacheControl: "no-store" });
      await store.put("images/a.png", bytes(10, 2), { contentType: "image/webp" });
      expect(Array.from((await store.get("images/a.png")) ?? [])).toEqual(Array.from(bytes(10, 2)));
      const info = await store.stat("images/a.png");
      expect(info).toEqual({ size: 10, contentType: "image/webp" });
      expect(info?.cacheControl).toBeUndefined();
    });
  });
}

export function describeStat(context: BlobStoreTestContext): void {
  describe("stat", () => {
    it("reports size in bytes, content type and cache control", async () => {
      const { store } = context;
      const cacheControl = "public, max-age=31536000, immutable";
      await store.put("images/b.png", bytes(1234, 7), { contentType: PNG, cacheControl });
      expect(await store.stat("images/b.png")).toEqual({ size: 1234, contentType: PNG, cacheControl });
    });

    it("reports no cache control when none was stored", async () => {
      const { store } = context;
      await store.put("images/c.png", bytes(5, 7), { contentType: PNG });
      const info = await store.stat("images/c.png");
      expect(info).toEqual({ size: 5, contentType: PNG });
      expect(info?.cacheControl).toBeUndefined();
    });
  });
}

export function describeAbsence(context: BlobStoreTestContext): void {
  describe("absence", () => {
    it("returns null from get and stat for a missing key", async () => {
      const { store } = context;
      expect(await store.get("missing.png")).toBeNull();
      expect(await store.stat("missing.png")).toBeNull();
      expect(await store.get("no/such/folder/missing.png")).toBeNull();
      expect(await store.stat("no/such/folder/missing.png")).toBeNull();
    });

    it("returns null for a key that is only the folder of other keys", async () => {
      const { store } = context;
      await store.put("folder/inner.png", bytes(3, 1), { contentType: PNG });
      expect(await store.get("folder")).toBeNull();
      expect(await store.stat("folder")).toBeNull();
    });

    it("deletes idempotently", async () => {
      const { store } = context;
      await expect(store.delete("never-stored.png")).resolves.toBeUndefined();
      await expect(store.delete("no/such/folder/x.png")).resolves.toBeUndefined();
      await store.put("images/d.png", bytes(3, 1), { contentType: PNG });
      await store.delete("images/d.png");
      expect(await store.get("images/d.png")).toBeNull();
      expect(await store.stat("images/d.png")).toBeNull();
      await expect(store.delete("images/d.png")).resolves.toBeUndefined();
    });

    it("deletes only the given key", async () => {
      const { store } = context;
      await store.put("images/e1.png", bytes(3, 1), { contentType: PNG });
      await store.put("images/e2.png", bytes(4, 2), { contentType: PNG });
      await store.delete("images/e1.png");
      expect(await store.stat("images/e2.png")).toEqual({ size: 4, contentType: PNG });
    });
  });
}

export function describeKeyValidation(context: BlobStoreTestContext): void {
  describe("key validation", () => {
    it.each(INVALID_BLOB_KEYS.map((key) => [JSON.stringify(key).slice(0, 40), key]))(
      "refuses key %s with a TypeError in every method",
      async (_label, key) => {
        const { store } = context;
        await expect(store.put(key, bytes(1, 1), { contentType: PNG })).rejects.toBeInstanceOf(TypeError);
        await expect(store.get(key)).rejects.toBeInstanceOf(TypeError);
        await expect(store.stat(key)).rejects.toBeInstanceOf(TypeError);
        await expect(store.delete(key)).rejects.toBeInstanceOf(TypeError);
      },
    );

    it("does not store anything under a refused key", async () => {
      const { store } = context;
      await expect(store.put("../escape.png", bytes(1, 1), { contentType: PNG })).rejects.toThrow();
      expect(await store.get("escape.png")).toBeNull();
    });
  });
}

export function describeCopies(context: BlobStoreTestContext): void {
  describe("copies", () => {
    it("is not affected by mutating the buffer given to put", async () => {
      const { store } = context;
      const data = bytes(64, 5);
      await store.put("copy/in.bin", data, { contentType: "application/octet-stream" });
      data.fill(9);
      expect(Array.from((await store.get("copy/in.bin")) ?? [])).toEqual(Array.from(bytes(64, 5)));
    });

    it("is not affected by mutating a buffer returned by get", async () => {
      const { store } = context;
      await store.put("copy/out.bin", bytes(64, 5), { contentType: "application/octet-stream" });
      const first = await store.get("copy/out.bin");
      first?.fill(9);
      expect(Array.from((await store.get("copy/out.bin")) ?? [])).toEqual(Array.from(bytes(64, 5)));
    });

    it("is not affected by mutating the metadata given to put", async () => {
      const { store } = context;
      const metadata = { contentType: PNG, cacheControl: "no-cache" };
      await store.put("copy/meta.png", bytes(2, 1), metadata);
      metadata.contentType = "text/html";
      metadata.cacheControl = "public";
      expect(await store.stat("copy/meta.png")).toEqual({
        size: 2,
        contentType: PNG,
        cacheControl: "no-cache",
      });
    });
  });
}

export function describeConcurrency(context: BlobStoreTestContext, capabilities: ResolvedCapabilities): void {
  describe("concurrency", () => {
    it("ends with one complete value when puts of different values race on one key", async () => {
      const { store } = context;
      const size = 64 * 1024;
      await Promise.all(
        Array.from({ length: 8 }, (_, index) =>
          store.put("race/one.bin", bytes(size + index, index + 1), {
            contentType: `application/x-value-${index + 1}`,
          }),
        ),
      );
      if (capabilities.atomicPuts === false) {
        await store.put("race/one.bin", bytes(size, 42), { contentType: "application/x-final" });
        expect(Array.from((await store.get("race/one.bin")) ?? [])).toEqual(Array.from(bytes(size, 42)));
        expect(await store.stat("race/one.bin")).toEqual({ size, contentType: "application/x-final" });
        return;
      }
      const read = await store.get("race/one.bin");
      expect(read).not.toBeNull();
      const winner = read?.[0] ?? 0;
      expect(winner).toBeGreaterThanOrEqual(1);
      expect(winner).toBeLessThanOrEqual(8);
      expect(read?.byteLength).toBe(size + winner - 1);
      expect(read?.every((value) => value === winner)).toBe(true);
      const info = await store.stat("race/one.bin");
      expect(info?.size).toBe(size + winner - 1);
      expect(info?.contentType).toBe(`application/x-value-${winner}`);
    });

    it("keeps many keys with slashes apart", async () => {
      const { store } = context;
      const keys = Array.from({ length: 60 }, (_, index) => {
        const shape = index % 3;
        if (shape === 0) return `images/image_${index}.png`;
        if (shape === 1) return `derived/${index % 4}/v-${index}.webp`;
        return `public/a/b/c/d/${index}.tar.gz`;
      });
      await Promise.all(
        keys.map((key, index) => store.put(key, bytes(index + 1, index), { contentType: `x/${index}` })),
      );
      for (const [index, key] of keys.entries()) {
        expect(Array.from((await store.get(key)) ?? [])).toEqual(Array.from(bytes(index + 1, index)));
        expect(await store.stat(key)).toEqual({ size: index + 1, contentType: `x/${index}` });
      }
    });

    it.skipIf(!capabilities.keyAsPrefix)("stores a key and keys below it side by side", async () => {
      const { store } = context;
      await store.put("nested", bytes(1, 1), { contentType: PNG });
      await store.put("nested/child", bytes(2, 2), { contentType: PNG });
      expect(Array.from((await store.get("nested")) ?? [])).toEqual([1]);
      expect(Array.from((await store.get("nested/child")) ?? [])).toEqual([2, 2]);
    });
  });
}

export function describeOtherProcesses(
  context: BlobStoreTestContext,
  options: BlobStoreConformanceOptions,
): void {
  describe("other processes", () => {
    const peer = options.peer;
    it.skipIf(peer === undefined)(
      "shows a completed put and delete to another instance's next read",
      async () => {
        const { store } = context;
        const other = await peer?.(store);
        if (other === undefined) return;
        expect(await other.get("shared/a.png")).toBeNull();
        await store.put("shared/a.png", bytes(300, 3), { contentType: PNG, cacheControl: "no-cache" });
        expect(Array.from((await other.get("shared/a.png")) ?? [])).toEqual(Array.from(bytes(300, 3)));
        expect(await other.stat("shared/a.png")).toEqual({
          size: 300,
          contentType: PNG,
          cacheControl: "no-cache",
        });
        await other.put("shared/a.png", bytes(2, 4), { contentType: "image/webp" });
        expect(await store.stat("shared/a.png")).toEqual({ size: 2, contentType: "image/webp" });
        await other.delete("shared/a.png");
        expect(await store.get("shared/a.png")).toBeNull();
        expect(await store.stat("shared/a.png")).toBeNull();
      },
    );
  });
}
