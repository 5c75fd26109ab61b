import { createBlobVariantCache, type VariantCache } from "@pixport/core";
import {
  describeBlobStoreConformance,
  describeImageRepositoryConformance,
  describeKeyStoreConformance,
  describeVariantCacheConformance,
} from "@pixport/testing";
import { expect, it } from "vitest";
import { createFsBlobStore, createFsImageRepository, createFsKeyStore } from "../src/index.js";
import { makeTempDirectory, removeDirectory } from "./helpers.js";

// Each test gets its own fresh directory; cleanup removes it (the stores expose their root). A peer
// is a second instance on the same root: it shares nothing in memory, like another process.
function rootOf(store: object): string {
  if (!("root" in store) || typeof store.root !== "string") throw new Error("Expected an fs store.");
  return store.root;
}

async function cleanup(store: object): Promise<void> {
  await removeDirectory(rootOf(store));
}

describeBlobStoreConformance({
  name: "fs",
  create: async () => createFsBlobStore({ root: await makeTempDirectory() }),
  peer: (store) => createFsBlobStore({ root: rootOf(store) }),
  cleanup,
  // A path is either a file or a directory, so "a" and "a/b" cannot both be blobs (see README).
  capabilities: { keyAsPrefix: false },
  extraTests(context) {
    it("refuses a key that is both a blob and a folder of other keys with a TypeError", async () => {
      const { store } = context;
      await store.put("nested", new Uint8Array([1]), { contentType: "image/png" });
      await expect(
        store.put("nested/child", new Uint8Array([2]), { contentType: "image/png" }),
      ).rejects.toThrow(TypeError);
      await store.put("folder/child", new Uint8Array([3]), { contentType: "image/png" });
      await expect(store.put("folder", new Uint8Array([4]), { contentType: "image/png" })).rejects.toThrow(
        TypeError,
      );
      expect(Array.from((await store.get("nested")) ?? [])).toEqual([1]);
      expect(Array.from((await store.get("folder/child")) ?? [])).toEqual([3]);
      expect(await store.get("folder")).toBeNull();
    });

    it("refuses a key ending with a slash, which would name a directory", async () => {
      const { store } = context;
      await expect(store.put("images/", new Uint8Array([1]), { contentType: "image/png" })).rejects.toThrow(
        TypeError,
      );
      await expect(store.get("images/")).rejects.toThrow(TypeError);
    });
  },
});

describeImageRepositoryConformance({
  name: "fs",
  create: async () => createFsImageRepository({ root: await makeTempDirectory() }),
  peer: (repository) => createFsImageRepository({ root: rootOf(repository) }),
  cleanup,
});

describeKeyStoreConformance({
  name: "fs",
  create: async () => createFsKeyStore({ root: await makeTempDirectory() }),
  peer: (store) => createFsKeyStore({ root: rootOf(store) }),
  cleanup,
});

// The default variant cache over files (what the prebuilt server uses).
const variantRoots = new WeakMap<VariantCache, string>();
describeVariantCacheConformance({
  name: "blob-store variant cache on fs",
  create: async () => {
    const root = await makeTempDirectory();
    const cache = createBlobVariantCache(createFsBlobStore({ root }), { maxBytes: 1024 * 1024 });
    variantRoots.set(cache, root);
    return cache;
  },
  peer: async (cache) =>
    createBlobVariantCache(createFsBlobStore({ root: variantRoots.get(cache)! }), { maxBytes: 1024 * 1024 }),
  cleanup: async (cache) => removeDirectory(variantRoots.get(cache)!),
});
