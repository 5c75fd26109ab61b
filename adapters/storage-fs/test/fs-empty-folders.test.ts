import { existsSync } from "node:fs";
import * as nodeFs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFsBlobStore } from "../src/index.js";
import { makeTempDirectory, removeDirectory } from "./helpers.js";

let base: string;
let root: string;
beforeEach(async () => {
  base = await makeTempDirectory();
  root = path.join(base, "root");
});
afterEach(async () => {
  await removeDirectory(base);
});

const PNG = { contentType: "image/png" };
const bytes = (value: number) => new Uint8Array([value, value, value]);

describe("folders emptied by deletes", () => {
  it("are removed up to the root once their last blob is gone, and not before", async () => {
    const store = createFsBlobStore({ root });
    await store.put("variants/image_a/k1.png", bytes(1), PNG);
    await store.put("variants/image_a/k2.png", bytes(2), PNG);
    await store.put("variants/image_b/k1.png", bytes(3), PNG);
    await store.delete("variants/image_a/k1.png");
    expect(existsSync(path.join(root, "variants/image_a"))).toBe(true);
    await store.delete("variants/image_a/k2.png");
    expect(existsSync(path.join(root, "variants/image_a"))).toBe(false);
    expect(existsSync(path.join(root, "variants"))).toBe(true);
    await store.delete("variants/image_b/k1.png");
    expect(existsSync(path.join(root, "variants"))).toBe(false);
    // The root itself stays, and the store goes on working.
    expect(existsSync(root)).toBe(true);
    await store.put("variants/image_a/k3.png", bytes(4), PNG);
    expect(await store.get("variants/image_a/k3.png")).toEqual(bytes(4));
  });

  it("never make a put into the same folder fail when a delete removes it mid-put", async () => {
    // The window: a put has made the folder, and before it writes its file a delete of the
    // folder's last blob removes the (empty) folder. Simulated exactly, once.
    const folder = path.join(root, "variants", "image_a");
    let raced = false;
    const racingFs = {
      ...nodeFs,
      open: (async (file: string, ...rest: unknown[]) => {
        if (!raced && path.dirname(String(file)) === folder && String(file).includes("~tmp")) {
          raced = true;
          await nodeFs.rmdir(folder);
        }
        return (nodeFs.open as (...args: unknown[]) => unknown)(file, ...rest);
      }) as typeof nodeFs.open,
    };
    const store = createFsBlobStore({ root, fs: racingFs });
    await store.put("variants/image_a/k1.png", bytes(1), PNG);
    expect(raced).toBe(true);
    expect(await store.get("variants/image_a/k1.png")).toEqual(bytes(1));
  });

  it("are left in place by an injected fs without rmdir", async () => {
    const { rmdir: _rmdir, ...withoutRmdir } = nodeFs;
    const store = createFsBlobStore({ root, fs: withoutRmdir as never });
    await store.put("variants/image_a/k1.png", bytes(1), PNG);
    await store.delete("variants/image_a/k1.png");
    expect(existsSync(path.join(root, "variants/image_a"))).toBe(true);
  });
});
