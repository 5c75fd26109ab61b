import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { photoCorpus } from "../src/index.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

describe("the real-photo corpus", () => {
  it("holds 16 decodable photographs of at least 10 kinds, one of them transparent", async () => {
    const photos = photoCorpus();
    expect(photos).toHaveLength(16);
    expect(new Set(photos.map((photo) => photo.kind)).size).toBeGreaterThanOrEqual(10);
    const sizes = await Promise.all(photos.map((photo) => sharp(photo.path).metadata()));
    for (const [index, size] of sizes.entries()) {
      expect(size.width, photos[index]?.file).toBeGreaterThanOrEqual(172);
      expect(size.height, photos[index]?.file).toBeGreaterThanOrEqual(172);
    }
    expect(sizes.filter((size) => size.hasAlpha).length).toBe(1);
  });

  it("a missing corpus is an error naming the script that fetches it", () => {
    const empty = mkdtempSync(path.join(tmpdir(), "pixport-photos-"));
    const previous = process.env.PIXPORT_PHOTOS_DIR;
    process.env.PIXPORT_PHOTOS_DIR = empty;
    try {
      expect(() => photoCorpus()).toThrow(/node scripts\/fetch-photos\.mjs/);
    } finally {
      if (previous === undefined) delete process.env.PIXPORT_PHOTOS_DIR;
      else process.env.PIXPORT_PHOTOS_DIR = previous;
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it("the fetch script leaves a complete corpus as it is, without the network", () => {
    // Inside the test namespace there is no route off the machine; a present, verified corpus is
    // recognised from its files alone.
    const run = spawnSync(process.execPath, [path.join(root, "scripts/fetch-photos.mjs")], {
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(path.dirname(photoCorpus()[0]!.path));
  });
});
