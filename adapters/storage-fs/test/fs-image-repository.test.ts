import * as nodeFs from "node:fs/promises";
import path from "node:path";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import { conformanceImageId, conformanceImageRecord } from "@pixport/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFsImageRepository, type FsPromises } from "../src/index.js";
import { listFiles, makeTempDirectory, recordingFs, removeDirectory, systemError } from "./helpers.js";

let root: string;

beforeEach(async () => {
  root = await makeTempDirectory();
});
afterEach(async () => {
  await removeDirectory(root);
});

function at(seconds: number): string {
  return new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
}

const owner = { accountId: "acct_1", stage: "test" as const };

describe("options", () => {
  it.each([
    ["no root", {}],
    ["a tiny change log limit", { root: "/tmp/x", changeLogMaxBytes: 10 }],
    ["a logger that is not one", { root: "/tmp/x", logger: { warn: "loud" } }],
  ])("throws INVALID_CONFIGURATION for %s", (_label, options) => {
    let thrown: unknown;
    try {
      createFsImageRepository(options as never);
    } catch (error) {
      thrown = error;
    }
    expect(isImagePipelineError(thrown) && thrown.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
  });
});

describe("layout and restart", () => {
  it("stores one JSON file per record under records/", async () => {
    const repository = createFsImageRepository({ root });
    const record = conformanceImageRecord({ id: conformanceImageId(1) });
    await repository.insert(record);
    expect(await listFiles(root)).toEqual(["changes.log", `records/${record.id}.json`]);
    expect(
      JSON.parse(await nodeFs.readFile(path.join(root, "records", `${record.id}.json`), "utf8")),
    ).toEqual(record);
  });

  it("loses nothing across a restart, list order included", async () => {
    const first = createFsImageRepository({ root });
    const records = Array.from({ length: 30 }, (_, index) =>
      conformanceImageRecord({
        id: conformanceImageId(index),
        accountId: index % 3 === 0 ? "acct_2" : "acct_1",
        createdAt: at(index % 7),
      }),
    );
    for (const record of records) await first.insert(record);
    await first.update(conformanceImageId(4), { url: "https://cdn.example/4.png" });
    await first.delete(conformanceImageId(5));
    const before = await first.list({ ...owner, take: 100 });

    const second = createFsImageRepository({ root });
    const after = await second.list({ ...owner, take: 100 });
    expect(after).toEqual(before);
    expect(after?.items).toHaveLength(19);
    expect(await second.get(conformanceImageId(4))).toMatchObject({ url: "https://cdn.example/4.png" });
    expect(await second.get(conformanceImageId(5))).toBeNull();
    expect(await second.listCreatedBefore({ stage: "test", createdBefore: at(100), limit: 100 })).toEqual(
      await first.listCreatedBefore({ stage: "test", createdBefore: at(100), limit: 100 }),
    );
    await expect(second.insert(records[0] ?? conformanceImageRecord({ id: "x" }))).rejects.toThrow();
  });

  it("builds the index once and does not re-read record files to list", async () => {
    const seed = createFsImageRepository({ root });
    for (let index = 0; index < 300; index += 1) {
      await seed.insert(conformanceImageRecord({ id: conformanceImageId(index), createdAt: at(index) }));
    }
    let reads = 0;
    const fs: FsPromises = {
      ...nodeFs,
      readFile: ((...args: Parameters<typeof nodeFs.readFile>) => {
        reads += 1;
        return nodeFs.readFile(...args);
      }) as FsPromises["readFile"],
    };
    const repository = createFsImageRepository({ root, fs });
    let cursor: string | undefined;
    let seen = 0;
    do {
      const page = await repository.list({ ...owner, from: cursor, take: 7 });
      seen += page?.items.length ?? 0;
      cursor = page?.next ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toBe(300);
    expect(reads).toBe(300);
  });

  it("ignores temp files and unknown files at load, and sweeps old temp files", async () => {
    const first = createFsImageRepository({ root });
    const record = conformanceImageRecord({ id: conformanceImageId(1) });
    await first.insert(record);
    const leftover = path.join(root, "records", `.${conformanceImageId(2)}.json.1.abc~tmp`);
    await nodeFs.writeFile(leftover, "{partial");
    await nodeFs.writeFile(path.join(root, "records", "README.txt"), "not a record");
    const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
    await nodeFs.utimes(leftover, hourAgo, hourAgo);

    const second = createFsImageRepository({ root });
    expect((await second.list({ ...owner, take: 100 }))?.items).toEqual([record]);
    expect(await second.sweepTemporaryFiles()).toBe(1);
    expect(await listFiles(path.join(root, "records"))).toEqual(["README.txt", `${record.id}.json`]);
  });

  it("skips a damaged record file at load and reports it to the logger", async () => {
    const first = createFsImageRepository({ root });
    const good = conformanceImageRecord({ id: conformanceImageId(1) });
    await first.insert(good);
    await nodeFs.writeFile(path.join(root, "records", `${conformanceImageId(2)}.json`), "{broken");
    const warnings: unknown[] = [];
    const second = createFsImageRepository({
      root,
      logger: { warn: (message, context) => warnings.push({ message, context }) },
    });
    expect((await second.list({ ...owner, take: 100 }))?.items).toEqual([good]);
    expect(warnings).toEqual([
      {
        message: expect.stringMatching(/unreadable/),
        context: expect.objectContaining({ id: conformanceImageId(2) }),
      },
    ]);
  });

  it("treats ids that are not file-name safe as unknown, and refuses to insert them", async () => {
    const repository = createFsImageRepository({ root });
    await nodeFs.writeFile(
      path.join(root, "outside.json"),
      JSON.stringify(conformanceImageRecord({ id: "outside" })),
    );
    for (const id of ["../outside", "records/../../x", "a/b", "", "a.b"]) {
      expect(await repository.get(id)).toBeNull();
      expect(await repository.update(id, { url: null })).toBeNull();
      expect(await repository.delete(id)).toBe(false);
      await expect(repository.insert(conformanceImageRecord({ id }))).rejects.toThrow(TypeError);
    }
    expect(await nodeFs.readFile(path.join(root, "outside.json"), "utf8")).toContain("outside");
  });
});

describe("record validation", () => {
  it("refuses a record it could not read back after a restart", async () => {
    const repository = createFsImageRepository({ root });
    const bad = { ...conformanceImageRecord({ id: conformanceImageId(1) }), format: "bmp" } as never;
    await expect(repository.insert(bad)).rejects.toThrow(/format/);
    expect(await repository.get(conformanceImageId(1))).toBeNull();
    expect(await createFsImageRepository({ root }).get(conformanceImageId(1))).toBeNull();
  });
});

describe("several processes on one directory", () => {
  // Two instances share nothing in memory, exactly like two processes on the same directory.
  it("shows each instance's writes to the other's next read", async () => {
    const a = createFsImageRepository({ root });
    const b = createFsImageRepository({ root });
    expect((await b.list({ ...owner, take: 10 }))?.items).toEqual([]);

    const first = conformanceImageRecord({ id: conformanceImageId(1), createdAt: at(1) });
    await a.insert(first);
    expect(await b.get(first.id)).toEqual(first);
    expect((await b.list({ ...owner, take: 10 }))?.items).toEqual([first]);

    const published = await b.update(first.id, { url: "https://cdn.example/1.png" });
    expect(await a.get(first.id)).toEqual(published);
    expect((await a.list({ ...owner, take: 10 }))?.items).toEqual([published]);

    const second = conformanceImageRecord({ id: conformanceImageId(2), createdAt: at(2) });
    await b.insert(second);
    expect((await a.list({ ...owner, take: 10 }))?.items.map((record) => record.id)).toEqual([
      second.id,
      first.id,
    ]);
    expect((await a.listCreatedBefore({ stage: "test", createdBefore: at(10), limit: 10 })).length).toBe(2);

    expect(await a.delete(first.id)).toBe(true);
    expect(await b.get(first.id)).toBeNull();
    expect(await b.delete(first.id)).toBe(false);
    expect((await b.list({ ...owner, take: 10 }))?.items).toEqual([second]);
  });

  it("rejects an insert of an id that another instance inserted, even before it saw the change", async () => {
    const a = createFsImageRepository({ root });
    const b = createFsImageRepository({ root });
    const record = conformanceImageRecord({ id: conformanceImageId(1) });
    await b.list({ ...owner, take: 1 });
    await nodeFs.mkdir(path.join(root, "records"), { recursive: true });
    // As if another process wrote the record and died before announcing it.
    await nodeFs.writeFile(path.join(root, "records", `${record.id}.json`), JSON.stringify(record));
    await expect(a.insert({ ...record, name: "other.png" })).rejects.toThrow(/already exists/);
    await expect(b.insert({ ...record, name: "other.png" })).rejects.toThrow(/already exists/);
    expect(await b.get(record.id)).toEqual(record);
  });

  it("lets exactly one of two instances insert the same id at the same time", async () => {
    const a = createFsImageRepository({ root });
    const b = createFsImageRepository({ root });
    await Promise.all([a.list({ ...owner, take: 1 }), b.list({ ...owner, take: 1 })]);
    const record = conformanceImageRecord({ id: conformanceImageId(1) });
    const results = await Promise.allSettled([
      a.insert({ ...record, name: "a.png" }),
      b.insert({ ...record, name: "b.png" }),
    ]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const winner = results[0]?.status === "fulfilled" ? "a.png" : "b.png";
    expect(await a.get(record.id)).toMatchObject({ name: winner });
    expect(await b.get(record.id)).toMatchObject({ name: winner });
  });

  it("rolls the change log over and keeps other instances consistent", async () => {
    const a = createFsImageRepository({ root, changeLogMaxBytes: 1024 });
    const b = createFsImageRepository({ root, changeLogMaxBytes: 1024 });
    await b.list({ ...owner, take: 1 });
    for (let index = 0; index < 60; index += 1) {
      await a.insert(conformanceImageRecord({ id: conformanceImageId(index), createdAt: at(index) }));
      if (index % 25 === 0) await b.list({ ...owner, take: 1 });
    }
    const log = await nodeFs.stat(path.join(root, "changes.log"));
    // 60 lines of 32 bytes would be 1920 bytes without a rollover.
    expect(log.size).toBeLessThanOrEqual(1024 + 32);
    expect((await b.list({ ...owner, take: 100 }))?.items).toHaveLength(60);
    expect((await b.list({ ...owner, take: 100 }))?.items).toEqual(
      (await a.list({ ...owner, take: 100 }))?.items,
    );
  });
});

describe("crash safety", () => {
  it("writes every record through temp file, fsync, link or rename, directory fsync", async () => {
    const { fs, events } = recordingFs();
    const repository = createFsImageRepository({ root, fs });
    const record = conformanceImageRecord({ id: conformanceImageId(1) });
    const records = path.join(root, "records");
    const target = path.join(records, `${record.id}.json`);
    const ofRecords = () =>
      events.filter((event) => path.dirname(event.path) === records || event.path === records);

    await repository.insert(record);
    const insert = ofRecords();
    expect(insert.map((event) => event.call)).toEqual(["sync", "link", "unlink", "sync"]);
    expect(insert[1]).toMatchObject({ path: insert[0]?.path, target });
    expect(insert[2]?.path).toBe(insert[0]?.path);
    expect(insert[3]?.path).toBe(records);

    events.length = 0;
    await repository.update(record.id, { url: "https://cdn.example/1.png" });
    const update = ofRecords();
    expect(update.map((event) => event.call)).toEqual(["sync", "rename", "sync"]);
    expect(update[1]).toMatchObject({ path: update[0]?.path, target });
    expect(update[2]?.path).toBe(records);

    events.length = 0;
    await repository.delete(record.id);
    expect(ofRecords()).toEqual([
      { call: "unlink", path: target, target: undefined },
      { call: "sync", path: records, target: undefined },
    ]);
  });

  it.each(["ENOSPC", "EACCES", "EROFS", "EIO"])(
    "maps %s to STORAGE_UNAVAILABLE and stores nothing",
    async (code) => {
      const injected = systemError(code, "open");
      const { fs } = recordingFs((event) =>
        event.call === "open" && event.path.endsWith("~tmp") ? injected : undefined,
      );
      const repository = createFsImageRepository({ root, fs });
      const record = conformanceImageRecord({ id: conformanceImageId(1) });
      await expect(repository.insert(record)).rejects.toMatchObject({
        code: ErrorCodes.STORAGE_UNAVAILABLE,
        cause: injected,
      });
      expect(await repository.get(record.id)).toBeNull();
      expect(await createFsImageRepository({ root }).get(record.id)).toBeNull();
    },
  );

  it("maps a failure to read the directory at startup to STORAGE_UNAVAILABLE", async () => {
    const injected = systemError("EACCES", "scandir");
    const fs: FsPromises = {
      ...nodeFs,
      readdir: (async () => Promise.reject(injected)) as FsPromises["readdir"],
    };
    const repository = createFsImageRepository({ root, fs });
    await expect(repository.list({ ...owner, take: 1 })).rejects.toMatchObject({
      code: ErrorCodes.STORAGE_UNAVAILABLE,
      cause: injected,
    });
  });
});
