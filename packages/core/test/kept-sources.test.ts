import { describe, expect, it } from "vitest";
import { NOT_KEPT, SourceCache } from "../src/kept-sources.js";

interface Decoded {
  data: Uint8Array;
  raw: { width: number };
}
const decoded = (bytes: number): Decoded => ({ data: new Uint8Array(bytes), raw: { width: bytes } });

describe("SourceCache (the decoded sources a codec keeps)", () => {
  it("decodes a key once on its second use, even when several second uses come at once", async () => {
    const cache = new SourceCache<Decoded>(1000);
    let decodes = 0;
    const decode = async () => {
      decodes += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return decoded(100);
    };
    expect(await cache.get("a", decode)).toBeNull(); // first use: only remembered
    expect(decodes).toBe(0);
    const together = await Promise.all(Array.from({ length: 5 }, () => cache.get("a", decode)));
    expect(decodes).toBe(1);
    expect(new Set(together).size).toBe(1);
    expect(together[0]?.raw.width).toBe(100);
    expect(await cache.get("a", decode)).toBe(together[0]);
    expect(decodes).toBe(1);
    expect(cache.bytes).toBe(100);
  });

  it("remembers a source not worth keeping (no second probe) and forgets a failed decode", async () => {
    const cache = new SourceCache<Decoded>(1000);
    let probes = 0;
    const notKept = async (): Promise<typeof NOT_KEPT> => {
      probes += 1;
      return NOT_KEPT;
    };
    await cache.get("animation", notKept);
    expect(await cache.get("animation", notKept)).toBeNull();
    expect(await cache.get("animation", notKept)).toBeNull();
    expect(probes).toBe(1);
    expect(cache.bytes).toBe(0);

    await cache.get("broken", async () => decoded(1));
    await expect(cache.get("broken", async () => Promise.reject(new Error("corrupt")))).rejects.toThrow(
      "corrupt",
    );
    // Still remembered as seen: the next use tries again.
    expect((await cache.get("broken", async () => decoded(7)))?.raw.width).toBe(7);
  });

  it("serves a source over a quarter of maxBytes for the use that decoded it, and does not keep it", async () => {
    const cache = new SourceCache<Decoded>(1000);
    let decodes = 0;
    const big = async () => {
      decodes += 1;
      return decoded(251);
    };
    await cache.get("big", big);
    expect((await cache.get("big", big))?.raw.width).toBe(251);
    expect(cache.bytes).toBe(0);
    expect(await cache.get("big", big)).toBeNull(); // remembered as not kept: the caller decodes
    expect(decodes).toBe(1);
  });

  it("stays within maxBytes, least recently used out first", async () => {
    const cache = new SourceCache<Decoded>(400);
    const keep = async (key: string) => {
      await cache.get(key, async () => decoded(100));
      return cache.get(key, async () => decoded(100));
    };
    for (const key of ["a", "b", "c", "d"]) await keep(key);
    expect(cache.bytes).toBe(400);
    await cache.get("a", async () => decoded(100)); // a is now the most recently used
    await keep("e"); // pushes out b, the least recently used
    expect(cache.bytes).toBe(400);
    let decodes = 0;
    const counting = async () => {
      decodes += 1;
      return decoded(100);
    };
    expect(await cache.get("a", counting)).not.toBeNull();
    expect(decodes).toBe(0);
    expect(await cache.get("b", counting)).toBeNull(); // forgotten: a first use again
  });
});
