import * as nodeFs from "node:fs/promises";
import path from "node:path";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isInside, resolveInside } from "../src/containment.js";
import { createFsBlobStore } from "../src/index.js";
import { listFiles, makeTempDirectory, recordingFs, removeDirectory, systemError } from "./helpers.js";

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
/** Metadata the file name does not imply, so puts write a sidecar. */
const WITH_SIDECAR = { contentType: "image/png", cacheControl: "public, max-age=60" };

describe("options", () => {
  it.each([
    ["no options", undefined],
    ["no root", {}],
    ["an empty root", { root: "" }],
    ["a non-string root", { root: 42 }],
    ["a root with NUL", { root: "/tmp/a\u0000b" }],
    ["an fs without the needed functions", { root: "/tmp/x", fs: { readFile: () => undefined } }],
  ])("throws INVALID_CONFIGURATION for %s", (_label, options) => {
    let thrown: unknown;
    try {
      createFsBlobStore(options as never);
    } catch (error) {
      thrown = error;
    }
    expect(isImagePipelineError(thrown) && thrown.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
    expect((thrown as Error).message).toMatch(/createFsBlobStore/);
  });

  it("resolves a relative root against the working directory", () => {
    expect(createFsBlobStore({ root: "relative/blobs" }).root).toBe(path.resolve("relative/blobs"));
  });
});

describe("layout and restart", () => {
  it("keeps one file per key under the root, named like the key, with a hidden sidecar", async () => {
    const store = createFsBlobStore({ root });
    await store.put("images/image_abc.png", new Uint8Array([1, 2, 3]), {
      contentType: "image/png",
      cacheControl: "public, max-age=60",
    });
    expect(await listFiles(root)).toEqual(["images/.image_abc.png~meta.json", "images/image_abc.png"]);
    expect([...(await nodeFs.readFile(path.join(root, "images/image_abc.png")))]).toEqual([1, 2, 3]);
    expect(
      JSON.parse(await nodeFs.readFile(path.join(root, "images/.image_abc.png~meta.json"), "utf8")),
    ).toEqual({
      contentType: "image/png",
      cacheControl: "public, max-age=60",
    });
  });

  it("is seen completely by a new instance on the same root", async () => {
    const first = createFsBlobStore({ root });
    await first.put("images/a.png", new Uint8Array([1]), {
      contentType: "image/png",
      cacheControl: "no-store",
    });
    await first.put("images/b.webp", new Uint8Array([2, 2]), { contentType: "image/webp" });
    await first.put("images/c.png", new Uint8Array([3]), PNG);
    await first.delete("images/c.png");

    const second = createFsBlobStore({ root });
    expect([...((await second.get("images/a.png")) ?? [])]).toEqual([1]);
    expect(await second.stat("images/a.png")).toEqual({
      size: 1,
      contentType: "image/png",
      cacheControl: "no-store",
    });
    expect(await second.stat("images/b.webp")).toEqual({ size: 2, contentType: "image/webp" });
    expect(await second.get("images/c.png")).toBeNull();
  });

  it("recreates its root when the directory was removed while running", async () => {
    const store = createFsBlobStore({ root });
    await store.put("a.png", new Uint8Array([1]), PNG);
    await removeDirectory(root);
    expect(await store.get("a.png")).toBeNull();
    await store.put("images/b.png", new Uint8Array([2]), WITH_SIDECAR);
    expect(await listFiles(root)).toEqual(["images/.b.png~meta.json", "images/b.png"]);
  });

  it("reports application/octet-stream for a file placed without a sidecar", async () => {
    await nodeFs.mkdir(path.join(root, "manual"), { recursive: true });
    await nodeFs.writeFile(path.join(root, "manual/file.bin"), Buffer.from([9, 9]));
    const store = createFsBlobStore({ root });
    expect(await store.stat("manual/file.bin")).toEqual({ size: 2, contentType: "application/octet-stream" });
  });

  it("throws INTERNAL for a corrupt sidecar instead of guessing", async () => {
    const store = createFsBlobStore({ root });
    await store.put("x.png", new Uint8Array([1]), PNG);
    await nodeFs.writeFile(path.join(root, ".x.png~meta.json"), "{not json");
    await expect(store.stat("x.png")).rejects.toMatchObject({ code: ErrorCodes.INTERNAL });
  });
});

describe("path containment", () => {
  it("compares against root + separator, so a sibling with the same prefix is outside", () => {
    expect(isInside("/data/root", "/data/root/x.png")).toBe(true);
    expect(isInside("/data/root", "/data/root")).toBe(true);
    expect(isInside("/data/root", "/data/root123/x.png")).toBe(false);
    expect(isInside("/data/root", "/data/roo")).toBe(false);
    expect(() => resolveInside("/data/root", "../root123/x.png")).toThrow(TypeError);
    expect(() => resolveInside("/data/root", "/etc/passwd")).toThrow(TypeError);
    expect(() => resolveInside("/data/root", ".")).toThrow(TypeError);
    expect(resolveInside("/data/root", "a/b.png")).toBe(path.resolve("/data/root/a/b.png"));
  });

  it("cannot reach a sibling directory with the same prefix through a key", async () => {
    const sibling = `${root}123`;
    await nodeFs.mkdir(sibling, { recursive: true });
    await nodeFs.writeFile(path.join(sibling, "secret.png"), "secret");
    const store = createFsBlobStore({ root });
    await expect(store.get("../root123/secret.png")).rejects.toThrow(TypeError);
    await expect(store.put("../root123/secret.png", new Uint8Array([1]), PNG)).rejects.toThrow(TypeError);
    await expect(store.delete("../root123/secret.png")).rejects.toThrow(TypeError);
    expect(await nodeFs.readFile(path.join(sibling, "secret.png"), "utf8")).toBe("secret");
  });

  it("refuses a symlinked folder that leads to a sibling with the same prefix", async () => {
    // A raw prefix check would accept <base>/root123 as inside <base>/root (CVE-2025-54387).
    const sibling = `${root}123`;
    await nodeFs.mkdir(sibling, { recursive: true });
    await nodeFs.mkdir(root, { recursive: true });
    await nodeFs.writeFile(path.join(sibling, "secret.png"), "secret");
    await nodeFs.symlink(sibling, path.join(root, "link"));
    const store = createFsBlobStore({ root });
    const refused = { code: ErrorCodes.INTERNAL, message: expect.stringMatching(/symbolic link/) };
    await expect(store.get("link/secret.png")).rejects.toMatchObject(refused);
    await expect(store.stat("link/secret.png")).rejects.toMatchObject(refused);
    await expect(store.put("link/new.png", new Uint8Array([1]), PNG)).rejects.toMatchObject(refused);
    await expect(store.put("link/deeper/new.png", new Uint8Array([1]), PNG)).rejects.toMatchObject(refused);
    await expect(store.delete("link/secret.png")).rejects.toMatchObject(refused);
    expect(await listFiles(sibling)).toEqual(["secret.png"]);
  });

  it("refuses a symlinked folder deep inside that points outside the root", async () => {
    const outside = path.join(base, "outside");
    await nodeFs.mkdir(outside, { recursive: true });
    await nodeFs.mkdir(path.join(root, "a"), { recursive: true });
    await nodeFs.symlink(outside, path.join(root, "a", "b"));
    const store = createFsBlobStore({ root });
    await expect(store.put("a/b/c/d.png", new Uint8Array([1]), PNG)).rejects.toMatchObject({
      code: ErrorCodes.INTERNAL,
    });
    expect(await nodeFs.readdir(outside)).toEqual([]);
  });

  it("refuses a blob file that is a symbolic link to a file outside", async () => {
    const outside = path.join(base, "outside.png");
    await nodeFs.writeFile(outside, "secret");
    await nodeFs.mkdir(root, { recursive: true });
    await nodeFs.symlink(outside, path.join(root, "leak.png"));
    const store = createFsBlobStore({ root });
    await expect(store.get("leak.png")).rejects.toMatchObject({ code: ErrorCodes.INTERNAL });
    await expect(store.stat("leak.png")).rejects.toMatchObject({ code: ErrorCodes.INTERNAL });
    // Overwriting replaces the link itself and never writes through it.
    await store.put("leak.png", new Uint8Array([7]), PNG);
    expect(await nodeFs.readFile(outside, "utf8")).toBe("secret");
    expect([...((await store.get("leak.png")) ?? [])]).toEqual([7]);
  });

  it("follows a symlinked folder that stays inside the root", async () => {
    const store = createFsBlobStore({ root });
    await store.put("real/x.png", new Uint8Array([5]), PNG);
    await nodeFs.symlink(path.join(root, "real"), path.join(root, "alias"));
    expect([...((await store.get("alias/x.png")) ?? [])]).toEqual([5]);
  });

  it("works when the root itself is reached through a symbolic link", async () => {
    await nodeFs.mkdir(root, { recursive: true });
    const alias = path.join(base, "alias-root");
    await nodeFs.symlink(root, alias);
    const store = createFsBlobStore({ root: alias });
    await store.put("images/a.png", new Uint8Array([1]), PNG);
    expect(await store.stat("images/a.png")).toEqual({ size: 1, contentType: "image/png" });
    expect(await listFiles(root)).toContain("images/a.png");
  });
});

describe("sidecar elision", () => {
  it("writes no sidecar when the extension implies the metadata, and removes a stale one", async () => {
    const store = createFsBlobStore({ root });
    await store.put("images/a.png", new Uint8Array([1]), WITH_SIDECAR);
    expect(await listFiles(root)).toEqual(["images/.a.png~meta.json", "images/a.png"]);
    await store.put("images/a.png", new Uint8Array([2, 3]), PNG);
    expect(await listFiles(root)).toEqual(["images/a.png"]);
    expect(await store.stat("images/a.png")).toEqual({ size: 2, contentType: "image/png" });
    await store.put("images/b.jpg", new Uint8Array([1]), { contentType: "image/jpeg" });
    expect(await store.stat("images/b.jpg")).toEqual({ size: 1, contentType: "image/jpeg" });
    await store.put("images/c.jpg", new Uint8Array([1]), { contentType: "image/png" });
    expect(await store.stat("images/c.jpg")).toEqual({ size: 1, contentType: "image/png" });
  });
});

describe("crash safety", () => {
  it("fsyncs each temp file and renames it over the target, then fsyncs the directory once for both", async () => {
    const { fs, events } = recordingFs();
    const store = createFsBlobStore({ root, fs });
    await store.put("images/x.png", new Uint8Array([1, 2]), WITH_SIDECAR);
    const directory = await nodeFs.realpath(path.join(root, "images"));
    // Creating images/ made it durable in the root first; then two atomic writes, sidecar first, and
    // one directory sync after both renames (it makes both names durable).
    expect(events[0]).toEqual({ call: "sync", path: await nodeFs.realpath(root), target: undefined });
    const writes = events.slice(1);
    expect(writes.map((event) => event.call)).toEqual(["sync", "rename", "sync", "rename", "sync"]);
    const [metaSync, metaRename, dataSync, dataRename, dirSync] = writes;
    expect(metaRename?.path).toBe(metaSync?.path);
    expect(metaRename?.target).toBe(path.join(directory, ".x.png~meta.json"));
    expect(dataRename?.path).toBe(dataSync?.path);
    expect(dataRename?.target).toBe(path.join(directory, "x.png"));
    for (const rename of [metaRename, dataRename]) {
      expect(path.dirname(rename?.path ?? "")).toBe(directory);
      expect(path.basename(rename?.path ?? "")).toMatch(/^\..*~tmp$/);
    }
    expect(dirSync?.path).toBe(directory);
  });

  it("makes new directories durable in their parents", async () => {
    const { fs, events } = recordingFs();
    const store = createFsBlobStore({ root, fs });
    await store.put("a/b/x.png", new Uint8Array([1]), PNG);
    const real = await nodeFs.realpath(root);
    const syncs = events.filter((event) => event.call === "sync").map((event) => event.path);
    expect(syncs.slice(0, 2)).toEqual([real, path.join(real, "a")]);
  });

  it("unlinks the bytes, then the sidecar, then fsyncs the directory on delete", async () => {
    const { fs, events } = recordingFs();
    const store = createFsBlobStore({ root, fs });
    await store.put("x.png", new Uint8Array([1]), PNG);
    events.length = 0;
    await store.delete("x.png");
    const real = await nodeFs.realpath(root);
    expect(events).toEqual([
      { call: "unlink", path: path.join(real, "x.png"), target: undefined },
      { call: "unlink", path: path.join(real, ".x.png~meta.json"), target: undefined },
      { call: "sync", path: real, target: undefined },
    ]);
  });

  it("ignores a leftover temp file on reads and sweeps it once it is old enough", async () => {
    const store = createFsBlobStore({ root });
    await store.put("images/x.png", new Uint8Array([1]), WITH_SIDECAR);
    const leftover = path.join(root, "images", ".y.png.123.abcdef~tmp");
    const fresh = path.join(root, ".z.png.456.abcdef~tmp");
    await nodeFs.writeFile(leftover, "partial");
    await nodeFs.writeFile(fresh, "in flight");
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    await nodeFs.utimes(leftover, hourAgo, hourAgo);

    expect(await store.get("images/y.png")).toBeNull();
    expect(await store.stat("images/y.png")).toBeNull();
    expect(await store.sweepTemporaryFiles()).toBe(1);
    expect(await listFiles(root)).toEqual([
      ".z.png.456.abcdef~tmp",
      "images/.x.png~meta.json",
      "images/x.png",
    ]);
    expect(await store.sweepTemporaryFiles({ olderThanMs: 0 })).toBe(1);
    expect(await listFiles(root)).toEqual(["images/.x.png~meta.json", "images/x.png"]);
  });

  it("does not sweep through a symbolic link out of the root", async () => {
    const outside = path.join(base, "outside");
    await nodeFs.mkdir(outside, { recursive: true });
    await nodeFs.writeFile(path.join(outside, ".victim~tmp"), "not ours");
    const store = createFsBlobStore({ root });
    await store.put("x.png", new Uint8Array([1]), PNG);
    await nodeFs.symlink(outside, path.join(root, "link"));
    expect(await store.sweepTemporaryFiles({ olderThanMs: 0 })).toBe(0);
    expect(await nodeFs.readdir(outside)).toEqual([".victim~tmp"]);
  });
});

describe("disk faults", () => {
  async function rejection(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      () => {
        throw new Error("expected a rejection");
      },
      (error: unknown) => error,
    );
  }

  it.each(["ENOSPC", "EIO", "EDQUOT"])(
    "maps %s while writing to STORAGE_UNAVAILABLE and leaves no temp file",
    async (code) => {
      const injected = systemError(code, "write");
      const { fs } = recordingFs((event) =>
        event.call === "open" && event.flags === "writeFile" && !event.path.includes("~meta")
          ? injected
          : undefined,
      );
      const store = createFsBlobStore({ root, fs });
      const error = await rejection(store.put("images/x.png", new Uint8Array(1000), PNG));
      expect(error).toMatchObject({ code: ErrorCodes.STORAGE_UNAVAILABLE, cause: injected });
      expect((error as Error).message).toContain(code);
      expect((error as Error).message).not.toContain(root);
      expect((await listFiles(root)).filter((file) => file.endsWith("~tmp"))).toEqual([]);
      expect(await createFsBlobStore({ root }).get("images/x.png")).toBeNull();
    },
  );

  it.each(["EACCES", "EROFS", "EPERM"])(
    "maps %s on open to STORAGE_UNAVAILABLE for every method",
    async (code) => {
      const store = createFsBlobStore({ root });
      await store.put("x.png", new Uint8Array([1]), PNG);
      const injected = systemError(code, "open");
      const { fs } = recordingFs((event) => (event.call === "open" ? injected : undefined));
      const failing = createFsBlobStore({ root, fs });
      // Started one at a time: a promise created early could reject before anyone awaits it.
      for (const operation of [
        () => failing.get("x.png"),
        () => failing.stat("x.png"),
        () => failing.put("y.png", new Uint8Array([1]), PNG),
      ]) {
        expect(await rejection(operation())).toMatchObject({
          code: ErrorCodes.STORAGE_UNAVAILABLE,
          cause: injected,
        });
      }
    },
  );

  it("maps a failing rename and a failing directory fsync to STORAGE_UNAVAILABLE", async () => {
    const renameError = systemError("EROFS", "rename");
    const renaming = createFsBlobStore({
      root,
      fs: recordingFs((event) => (event.call === "rename" ? renameError : undefined)).fs,
    });
    expect(await rejection(renaming.put("x.png", new Uint8Array([1]), PNG))).toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: renameError,
    });
    expect((await listFiles(root)).filter((file) => file.endsWith("~tmp"))).toEqual([]);

    const syncError = systemError("EIO", "fsync");
    const real = await nodeFs.realpath(root);
    const syncing = createFsBlobStore({
      root,
      fs: recordingFs((event) => (event.call === "sync" && event.path === real ? syncError : undefined)).fs,
    });
    expect(await rejection(syncing.delete("x.png"))).toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: syncError,
    });
  });

  it("maps EACCES on delete to STORAGE_UNAVAILABLE", async () => {
    const store = createFsBlobStore({ root });
    await store.put("x.png", new Uint8Array([1]), PNG);
    const injected = systemError("EACCES", "unlink");
    const failing = createFsBlobStore({
      root,
      fs: recordingFs((event) => (event.call === "unlink" ? injected : undefined)).fs,
    });
    expect(await rejection(failing.delete("x.png"))).toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: injected,
    });
    expect(await store.stat("x.png")).not.toBeNull();
  });

  it("passes unexpected errors through unchanged", async () => {
    const injected = systemError("EWEIRD", "open");
    const store = createFsBlobStore({
      root,
      fs: recordingFs((event) => (event.call === "open" ? injected : undefined)).fs,
    });
    await expect(store.put("x.png", new Uint8Array([1]), PNG)).rejects.toBe(injected);
  });
});
