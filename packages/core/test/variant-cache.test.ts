import { describe, expect, it } from "vitest";
import { createBlobVariantCache, createMemoryBlobStore } from "../src/index.js";

const variant = (bytes: number, fill = 1) => ({
  data: new Uint8Array(bytes).fill(fill),
  contentType: "image/png",
});

describe("createBlobVariantCache's bound", () => {
  it("keeps variants up to an eighth of the bound, and serves larger ones without keeping them", async () => {
    const store = createMemoryBlobStore();
    const cache = createBlobVariantCache(store, { maxBytes: 8_000 });
    // Other tenants' variants fill most of the cache.
    for (let index = 0; index < 7; index += 1) {
      await cache.put(`image_other${index}`, `k${index}.png`, variant(1_000, index));
    }
    expect(cache.bytes).toBe(7_000);
    // Two large variants of one image (each more than an eighth of the bound) are not kept...
    await cache.put("image_large", "a.png", variant(1_001));
    await cache.put("image_large", "b.png", variant(4_000));
    expect(await cache.get("image_large", "a.png")).toBeNull();
    expect(await cache.get("image_large", "b.png")).toBeNull();
    expect(await store.get("variants/image_large/b.png")).toBeNull();
    // ...and pushed nothing out.
    for (let index = 0; index < 7; index += 1) {
      expect((await cache.get(`image_other${index}`, `k${index}.png`))?.data[0]).toBe(index);
    }
    expect(cache.bytes).toBe(7_000);
  });

  it("still evicts the least recently used variant past the bound", async () => {
    const cache = createBlobVariantCache(createMemoryBlobStore(), { maxBytes: 8_000 });
    for (let index = 0; index < 9; index += 1) await cache.put("image_a", `k${index}.png`, variant(1_000));
    expect(cache.bytes).toBe(8_000);
    expect(await cache.get("image_a", "k0.png")).toBeNull();
    expect(await cache.get("image_a", "k8.png")).not.toBeNull();
  });

  it("takes another share when asked", async () => {
    const cache = createBlobVariantCache(createMemoryBlobStore(), { maxBytes: 8_000, maxEntryBytes: 5_000 });
    await cache.put("image_a", "big.png", variant(4_000));
    expect(await cache.get("image_a", "big.png")).not.toBeNull();
  });
});
