import { mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describeQuotaStoreConformance } from "@pixport/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createFsQuotaStore } from "../src/index.js";

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});
async function newRoot(): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), "pixport-quota-"));
  roots.push(root);
  return root;
}

// `peer` is a second store on the same directory: another process (the CLI next to the server).
describeQuotaStoreConformance({
  name: "fs",
  create: async () => {
    const root = await newRoot();
    return { store: createFsQuotaStore({ root }), peer: async () => createFsQuotaStore({ root }) };
  },
});

describe("createFsQuotaStore", () => {
  it("keeps usage in files a new instance reads (a restart), with account ids that cannot escape the root", async () => {
    const root = await newRoot();
    const first = createFsQuotaStore({ root });
    for (const account of ["acme", "../../etc", ".."]) {
      expect(
        (await first.reserve({ accountId: account, period: "2026-11", units: 2, limit: 25 })).granted,
      ).toBe(true);
    }
    const second = createFsQuotaStore({ root });
    expect(await second.usage("acme", "2026-11")).toBe(2);
    expect(await second.usage("../../etc", "2026-11")).toBe(2);
    expect(await second.usage("acme", "2026-12")).toBe(0);
    expect(await readdir(root)).toEqual(["2026-11"]);
    expect(
      (await readdir(path.join(root, "2026-11"))).every((name) => /^[A-Za-z0-9_-]+\.json$/.test(name)),
    ).toBe(true);
  });

  it("breaks a lock left by a crashed process once it is stale, and waits for a fresh one", async () => {
    const root = await newRoot();
    const store = createFsQuotaStore({ root, staleLockMs: 1_000, lockTimeoutMs: 300 });
    await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 });
    const [file] = await readdir(path.join(root, "2026-11"));
    const lock = path.join(root, "2026-11", `${file}~lock`);
    await writeFile(lock, "");
    // A fresh lock (another process mid-reservation) is waited for, then the wait times out.
    await expect(
      store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 }),
    ).rejects.toMatchObject({
      code: "STORAGE_UNAVAILABLE",
    });
    const old = new Date(Date.now() - 5_000);
    await utimes(lock, old, old);
    expect(await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 })).toEqual({
      granted: true,
      used: 2,
      limit: 25,
    });
  });
});

describe("uncapped reservations (upgraded accounts)", () => {
  it("are granted without a write, written within flushMs, and flushed on demand", async () => {
    const root = await newRoot();
    const store = createFsQuotaStore({ root, flushMs: 50 });
    const uncapped = Number.MAX_SAFE_INTEGER;
    for (let index = 0; index < 5; index++) {
      expect(
        await store.reserve({ accountId: "pro", period: "2026-11", units: 1, limit: uncapped }),
      ).toMatchObject({
        granted: true,
        used: index + 1,
      });
    }
    await store.release({ accountId: "pro", period: "2026-11", units: 1 });
    expect(await store.usage("pro", "2026-11")).toBe(4);
    // Another process sees them once written.
    const peer = createFsQuotaStore({ root });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await peer.usage("pro", "2026-11")).toBe(4);
    await store.reserve({ accountId: "pro", period: "2026-11", units: 2, limit: uncapped });
    await store.flush();
    expect(await peer.usage("pro", "2026-11")).toBe(6);
    // A capped reservation of the same account reads the written count.
    expect(await peer.reserve({ accountId: "pro", period: "2026-11", units: 1, limit: 7 })).toEqual({
      granted: true,
      used: 7,
      limit: 7,
    });
  });
});

describe("a lock left by a process that died", () => {
  it("is broken at once, not after staleLockMs", async () => {
    const root = await newRoot();
    const store = createFsQuotaStore({ root, staleLockMs: 60_000, lockTimeoutMs: 2_000 });
    await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 });
    const [file] = await readdir(path.join(root, "2026-11"));
    // A pid that no process has: the highest possible pid on Linux is far below this.
    await writeFile(path.join(root, "2026-11", `${file}~lock`), "4194999");
    // Without the pid check it would wait lockTimeoutMs (2 s, far below staleLockMs) and refuse.
    expect(await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 })).toMatchObject({
      granted: true,
      used: 2,
    });
  });

  it("is broken after a short grace when it names no holder (killed between creating and writing it)", async () => {
    const root = await newRoot();
    const store = createFsQuotaStore({ root, staleLockMs: 60_000, lockTimeoutMs: 3_000 });
    await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 });
    const [file] = await readdir(path.join(root, "2026-11"));
    await writeFile(path.join(root, "2026-11", `${file}~lock`), "");
    // Before: nobody could break it until staleLockMs, so the reservation failed after lockTimeoutMs.
    expect(await store.reserve({ accountId: "a", period: "2026-11", units: 1, limit: 25 })).toMatchObject({
      granted: true,
      used: 2,
    });
    // The store's own locks always name their holder: no temp file and no lock is left behind.
    expect((await readdir(path.join(root, "2026-11"))).sort()).toEqual([file]);
  });
});
