import type { VariantCache } from "@pixport/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

/** Options of {@link describeVariantCacheConformance}. */
export interface VariantCacheConformanceOptions {
  name: string;
  /** A fresh cache (over a fresh store); called before every test. */
  create: () => Promise<VariantCache>;
  /** A second cache over the same store (another process or node). Absent: no sharing checks. */
  peer?: (cache: VariantCache) => Promise<VariantCache>;
  cleanup?: (cache: VariantCache) => Promise<void>;
}

const A = "image_aaaaaaaaaaaaaaaaaaaaaaaa";
const B = "image_bbbbbbbbbbbbbbbbbbbbbbbb";
const bytes = (...values: number[]) => Uint8Array.from(values);

/**
 * The behaviour every VariantCache must show (see the port's TSDoc): `get` answers what `put`
 * stored under the same image and key (bytes and content type) or `null`; `removeImage` removes
 * every variant of that image and no other's; a peer over the same store sees the same entries.
 */
export function describeVariantCacheConformance(options: VariantCacheConformanceOptions): void {
  describe(`VariantCache conformance: ${options.name}`, () => {
    let cache: VariantCache;
    beforeEach(async () => {
      cache = await options.create();
    });
    afterEach(async () => {
      await options.cleanup?.(cache);
    });

    it("answers null for an unknown variant and what was put for a known one", async () => {
      expect(await cache.get(A, "k1.webp")).toBeNull();
      await cache.put(A, "k1.webp", { data: bytes(1, 2, 3), contentType: "image/webp" });
      const got = await cache.get(A, "k1.webp");
      expect(got === null ? null : [...got.data]).toEqual([1, 2, 3]);
      expect(got?.contentType).toBe("image/webp");
      expect(await cache.get(B, "k1.webp"), "keys are per image").toBeNull();
    });

    it("replaces a variant put again under the same key", async () => {
      await cache.put(A, "k2.png", { data: bytes(1), contentType: "image/png" });
      await cache.put(A, "k2.png", { data: bytes(9, 9), contentType: "image/png" });
      expect([...((await cache.get(A, "k2.png"))?.data ?? [])]).toEqual([9, 9]);
    });

    it("removes every variant of one image and no other's", async () => {
      await cache.put(A, "k3.png", { data: bytes(1), contentType: "image/png" });
      await cache.put(A, "k4.jpg", { data: bytes(2), contentType: "image/jpeg" });
      await cache.put(B, "k3.png", { data: bytes(3), contentType: "image/png" });
      await cache.removeImage(A);
      expect(await cache.get(A, "k3.png")).toBeNull();
      expect(await cache.get(A, "k4.jpg")).toBeNull();
      expect([...((await cache.get(B, "k3.png"))?.data ?? [])]).toEqual([3]);
      await cache.removeImage(A);
    });

    it("shares variants with a peer over the same store, removal included", async (context) => {
      if (options.peer === undefined) context.skip("this cache has no shared store");
      const peer = await options.peer!(cache);
      await cache.put(A, "k5.avif", { data: bytes(5), contentType: "image/avif" });
      expect([...((await peer.get(A, "k5.avif"))?.data ?? [])]).toEqual([5]);
      expect((await peer.get(A, "k5.avif"))?.contentType).toBe("image/avif");
      await peer.removeImage(A);
      expect(await peer.get(A, "k5.avif")).toBeNull();
    });
  });
}
