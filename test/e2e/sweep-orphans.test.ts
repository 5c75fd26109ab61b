import { mkdir, readdir, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { call, halves, newKey, upload, useServer } from "./harness.js";

// A crash between writing an image's bytes and its record, or in the middle of a publish, leaves
// files no record accounts for. The sweep removes them once they are older than the grace period.

const ORPHAN = "image_orphanorphanorphan123456";
const PUBLIC_ORPHAN = "image_publicpublicpublic123456";
const FRESH = "image_freshfreshfreshfres12345";

describe("sweep: orphan bytes and public copies without a published record", () => {
  const handle = useServer();

  it("removes old orphans, keeps fresh writes, referenced bytes and published copies", async () => {
    const key = await newKey(handle.server, "live", "sweep");
    const png = await halves(8, 8, [255, 0, 0], [0, 0, 255]);
    const kept = await upload(handle.url, key, png, "kept");
    const published = await upload(handle.url, key, png, "published");
    expect((await call(handle.url, "POST", `/v1/images/${published.id}/publish`, { key })).status).toBe(201);

    const blobs = path.join(handle.dataDir, "blobs", "images");
    const publicDir = path.join(handle.dataDir, "public", "images");
    await mkdir(publicDir, { recursive: true });
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    for (const [dir, id] of [
      [blobs, ORPHAN],
      [publicDir, PUBLIC_ORPHAN],
      [blobs, FRESH],
    ] as const) {
      await writeFile(path.join(dir, `${id}.png`), png);
      if (id !== FRESH) await utimes(path.join(dir, `${id}.png`), old, old);
    }
    // Even the legitimate files are old: only the missing record makes a file an orphan.
    for (const file of await readdir(blobs))
      if (!file.startsWith(FRESH)) await utimes(path.join(blobs, file), old, old);
    for (const file of await readdir(publicDir)) await utimes(path.join(publicDir, file), old, old);

    expect(await handle.server.pipeline.sweepOrphans()).toEqual({ privateBlobs: 1, publicCopies: 1 });
    const left = await readdir(blobs);
    expect(left.some((file) => file.startsWith(ORPHAN))).toBe(false);
    expect(left.some((file) => file.startsWith(FRESH))).toBe(true);
    expect(left.some((file) => file.startsWith(kept.id))).toBe(true);
    const publicLeft = await readdir(publicDir);
    expect(publicLeft.some((file) => file.startsWith(PUBLIC_ORPHAN))).toBe(false);
    expect((await fetch(`${handle.url}/images/${published.id}.png`)).status).toBe(200);
    // Everything the API knows still works, and a second sweep finds nothing.
    expect((await call(handle.url, "GET", `/v1/images/${kept.id}/download`, { key })).status).toBe(200);
    expect(await handle.server.pipeline.sweepOrphans()).toEqual({ privateBlobs: 0, publicCopies: 0 });
  });
});
