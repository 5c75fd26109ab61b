import { describe, expect, it } from "vitest";
import { createCachingBlobStore } from "../src/caching-blob-store.js";
import { SourceCache } from "../src/kept-sources.js";
import { createMemoryBlobStore } from "../src/memory/memory-blob-store.js";

interface Decoded {
  data: Uint8Array;
  key: string;
}

/** A cache of `maxBytes` whose decodes are counted per key; every source costs `bytes`. */
function counted(maxBytes: number) {
  const cache = new SourceCache<Decoded>(maxBytes);
  const decodes = new Map<string, number>();
  const use = (key: string, bytes = 100) =>
    cache.get(
      key,
      async () => {
        decodes.set(key, (decodes.get(key) ?? 0) + 1);
        return { data: new Uint8Array(bytes), key };
      },
      { bytes },
    );
  return { cache, decodes, use };
}

describe("SourceCache admission", () => {
  it("keeps the rotating sources that fit, which then serve every turn, and decodes none of the others for the cache", async () => {
    const { cache, decodes, use } = counted(400); // room for four of six
    const keys = ["a", "b", "c", "d", "e", "f"];
    const served = new Map<string, number>();
    for (let turn = 0; turn < 10; turn += 1) {
      for (const key of keys) {
        const kept = await use(key);
        if (kept !== null) served.set(key, (served.get(key) ?? 0) + 1);
        expect(cache.bytes).toBeLessThanOrEqual(400);
      }
    }
    // a..d were kept on their second use (room to spare) and stayed; e and f, whose reuse distance
    // (five other sources: 500 bytes) is over the bound, were never decoded for the cache.
    expect(Object.fromEntries(decodes)).toEqual({ a: 1, b: 1, c: 1, d: 1 });
    expect(Object.fromEntries(served)).toEqual({ a: 9, b: 9, c: 9, d: 9 });
    expect(cache.size).toBe(4);
  });

  it("lets no rotating stream push out sources in use: nothing is decoded for a key it will not keep until its next use", async () => {
    const { cache, decodes, use } = counted(400);
    for (const key of ["h1", "h2", "h3", "h4"]) {
      await use(key);
      await use(key);
    }
    expect(cache.bytes).toBe(400);
    // Ten sources rotate between uses of the four hot ones: each comes back after 13 others
    // (1,300 bytes), and the cache is full.
    for (let turn = 0; turn < 5; turn += 1) {
      for (let index = 0; index < 10; index += 1) {
        expect(await use(`r${index}`)).toBeNull();
        if (index % 3 === 0)
          for (const hot of ["h1", "h2", "h3", "h4"]) expect(await use(hot)).not.toBeNull();
      }
    }
    expect([...decodes.keys()].sort()).toEqual(["h1", "h2", "h3", "h4"]);
    expect([...decodes.values()]).toEqual([1, 1, 1, 1]);
  });

  it("admits a source used again soon even when the cache is full, pushing out the least recently used", async () => {
    const { cache, decodes, use } = counted(400);
    for (const key of ["a", "b", "c", "d"]) {
      await use(key);
      await use(key);
    }
    await use("x");
    await use("y");
    // x's reuse distance: y and x, 200 bytes: kept, and a (the least recently used) goes.
    expect(await use("x")).not.toBeNull();
    expect(decodes.get("x")).toBe(1);
    expect(cache.peek("a")).toBeNull();
    expect(cache.peek("b")).not.toBeNull();
    expect(cache.bytes).toBe(400);
  });

  it("replaces a kept source that does not serve a use, under the same rule", async () => {
    const cache = new SourceCache<Decoded & { size: number }>(1000);
    let decodes = 0;
    const use = (size: number) =>
      cache.get(
        "k",
        async () => {
          decodes += 1;
          return { data: new Uint8Array(size), key: "k", size };
        },
        { bytes: size, serves: (kept) => kept.size >= size },
      );
    await use(10);
    expect((await use(10))?.size).toBe(10);
    expect((await use(5))?.size).toBe(10); // the kept 10 serves a 5
    expect((await use(40))?.size).toBe(40); // a 40 needs more: decoded again and kept instead
    expect(decodes).toBe(2);
    expect(cache.bytes).toBe(40);
  });

  it("never holds more than maxBytes, nor a source over a quarter of it, whatever the pattern", async () => {
    const cache = new SourceCache<Decoded>(1000, 64);
    let seed = 12345;
    const next = (bound: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % bound;
    };
    for (let step = 0; step < 3000; step += 1) {
      const key = `k${next(step % 500 < 250 ? 8 : 60)}`; // phases of a hot few and of many
      const bytes = 20 + next(300);
      const kept = await cache.get(key, async () => ({ data: new Uint8Array(bytes), key }), { bytes });
      expect(cache.bytes).toBeLessThanOrEqual(1000);
      if (kept !== null) expect(kept.data.byteLength).toBeLessThanOrEqual(250);
    }
    expect(cache.bytes).toBeGreaterThan(0);
  });

  it("learns a blob's size from its first read (the blob cache), so rotating blobs do not push each other out", async () => {
    const backend = createMemoryBlobStore();
    const reads: string[] = [];
    const keys = ["a", "b", "c", "d", "e", "f"];
    for (const key of keys) await backend.put(key, new Uint8Array(100), { contentType: "x/y" });
    const cached = createCachingBlobStore(
      {
        ...backend,
        get: (key, options) => {
          reads.push(key);
          return backend.get(key, options);
        },
      },
      { maxBytes: 400 },
    );
    for (let turn = 0; turn < 6; turn += 1)
      for (const key of keys) expect(await cached.get(key)).toHaveLength(100);
    // Turn 1 reads all six; turn 2 reads all six again (a..d to keep them); turns 3..6 read only e and f.
    expect(reads).toHaveLength(6 + 6 + 4 * 2);
    expect(reads.slice(12)).toEqual(["e", "f", "e", "f", "e", "f", "e", "f"]);
  });
});
