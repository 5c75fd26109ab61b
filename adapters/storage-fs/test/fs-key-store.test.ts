import * as nodeFs from "node:fs/promises";
import path from "node:path";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import { conformanceKeyRecord } from "@pixport/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFsKeyStore } from "../src/index.js";
import { listFiles, makeTempDirectory, recordingFs, removeDirectory, systemError } from "./helpers.js";

let root: string;

beforeEach(async () => {
  root = await makeTempDirectory();
});
afterEach(async () => {
  await removeDirectory(root);
});

describe("createFsKeyStore", () => {
  it("throws INVALID_CONFIGURATION for bad options", () => {
    let thrown: unknown;
    try {
      createFsKeyStore({ root: 7 } as never);
    } catch (error) {
      thrown = error;
    }
    expect(isImagePipelineError(thrown) && thrown.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
  });

  it("keeps every key in keys.json, hashes only", async () => {
    const store = createFsKeyStore({ root });
    const record = conformanceKeyRecord(1);
    await store.insert(record);
    expect(await listFiles(root)).toEqual(["keys.json"]);
    expect(JSON.parse(await nodeFs.readFile(path.join(root, "keys.json"), "utf8"))).toEqual({
      keys: [record],
    });
  });

  it("is seen completely by a new instance and by another instance's next read", async () => {
    const a = createFsKeyStore({ root });
    const b = createFsKeyStore({ root });
    expect(await b.list()).toEqual([]);
    await a.insert(conformanceKeyRecord(1));
    expect(await b.findByHash(conformanceKeyRecord(1).hash)).toEqual(conformanceKeyRecord(1));
    await b.insert(conformanceKeyRecord(2));
    expect(await a.findByHash(conformanceKeyRecord(2).hash)).toEqual(conformanceKeyRecord(2));
    await expect(a.insert(conformanceKeyRecord(2, { id: "key_new" }))).rejects.toThrow(/already exists/);
    expect(await createFsKeyStore({ root }).list()).toHaveLength(2);
  });

  it("replaces keys.json through temp file, fsync, rename, directory fsync", async () => {
    const { fs, events } = recordingFs();
    const store = createFsKeyStore({ root, fs });
    await store.insert(conformanceKeyRecord(1));
    expect(events.map((event) => event.call)).toEqual(["sync", "rename", "sync"]);
    expect(path.dirname(events[0]?.path ?? "")).toBe(root);
    expect(events[1]).toMatchObject({ path: events[0]?.path, target: path.join(root, "keys.json") });
    expect(events[2]?.path).toBe(root);
  });

  it("throws INTERNAL for a corrupt keys.json instead of treating it as empty", async () => {
    await nodeFs.writeFile(path.join(root, "keys.json"), "[");
    await expect(createFsKeyStore({ root }).findByHash("x")).rejects.toMatchObject({
      code: ErrorCodes.INTERNAL,
    });
  });

  it("maps ENOSPC and EACCES to STORAGE_UNAVAILABLE and keeps the old file", async () => {
    await createFsKeyStore({ root }).insert(conformanceKeyRecord(1));
    const full = systemError("ENOSPC", "write");
    const store = createFsKeyStore({
      root,
      fs: recordingFs((event) => (event.flags === "writeFile" ? full : undefined)).fs,
    });
    await expect(store.insert(conformanceKeyRecord(2))).rejects.toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: full,
    });
    expect(await listFiles(root)).toEqual(["keys.json"]);
    expect(await createFsKeyStore({ root }).list()).toEqual([conformanceKeyRecord(1)]);

    const denied = systemError("EACCES", "open");
    const locked = createFsKeyStore({
      root,
      fs: recordingFs((event) => (event.call === "open" ? denied : undefined)).fs,
    });
    await expect(locked.findByHash(conformanceKeyRecord(1).hash)).rejects.toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: denied,
    });
  });

  it("refuses a record it could not read back, so keys.json stays readable", async () => {
    const store = createFsKeyStore({ root });
    await expect(store.insert({ ...conformanceKeyRecord(1), kind: "admin" } as never)).rejects.toThrow(
      TypeError,
    );
    await store.insert(conformanceKeyRecord(2));
    expect(await createFsKeyStore({ root }).list()).toEqual([conformanceKeyRecord(2)]);
  });

  it("sweeps old temp files from its root", async () => {
    const store = createFsKeyStore({ root });
    await store.insert(conformanceKeyRecord(1));
    await nodeFs.writeFile(path.join(root, ".keys.json.1.abc~tmp"), "{");
    expect(await store.list()).toHaveLength(1);
    expect(await store.sweepTemporaryFiles()).toBe(0);
    expect(await store.sweepTemporaryFiles({ olderThanMs: 0 })).toBe(1);
    expect(await listFiles(root)).toEqual(["keys.json"]);
  });
});
