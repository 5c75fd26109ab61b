import { afterAll, describe, expect, it } from "vitest";
import { call, decode, newKey, quadrants, removeDir, startServer, tempDataDir, upload } from "./harness.js";

describe("a redefined preset", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it("serves its new expansion for images already delivered, not the cached old one", async () => {
    const dataDir = await tempDataDir();
    cleanup.push(() => removeDir(dataDir));
    const first = await startServer(dataDir, { delivery: { presets: { thumb: "w_20" } } });
    const key = await newKey(first, "live", "presets");
    const imageId = (await upload(first.url, key, await quadrants(80, 40), "preset")).id;
    expect((await call(first.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
    const before = await call(first.url, "GET", `/v/_/${imageId}/p_thumb.png`);
    expect(before.status).toBe(200);
    expect((await decode(before.bytes)).width).toBe(20);
    await first.close();

    // The same data directory (and variant cache), the preset now 30 px wide.
    const second = await startServer(dataDir, { delivery: { presets: { thumb: "w_30" } } });
    cleanup.push(() => second.close());
    const after = await call(second.url, "GET", `/v/_/${imageId}/p_thumb.png`);
    expect(after.status).toBe(200);
    expect(after.headers.get("x-cache")).toBe("MISS");
    expect((await decode(after.bytes)).width).toBe(30);
    expect(after.headers.get("etag")).not.toBe(before.headers.get("etag"));
  });
});
