import { describe, expect, it } from "vitest";
import { type FsPromises, syncDirectory } from "../src/atomic-write.js";

/** An fs whose directory syncs take 20 ms and are logged with their start and end order. */
function slowSyncFs() {
  const log: string[] = [];
  let started = 0;
  const fs = {
    open: async () => ({
      sync: async () => {
        const number = ++started;
        log.push(`start ${number}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        log.push(`end ${number}`);
      },
      close: async () => {},
    }),
  } as unknown as FsPromises;
  return { fs, log, syncs: () => started };
}

describe("syncDirectory group commit", () => {
  it("lets callers that arrive during a running sync share one following sync", async () => {
    const { fs, log, syncs } = slowSyncFs();
    const first = syncDirectory(fs, "/d");
    await new Promise((resolve) => setTimeout(resolve, 5));
    const waiting = Array.from({ length: 8 }, () => syncDirectory(fs, "/d"));
    await Promise.all([first, ...waiting]);
    expect(syncs()).toBe(2);
    // The shared sync starts only after the running one ended: renames made before a caller's
    // call are covered by a sync that began after it.
    expect(log).toEqual(["start 1", "end 1", "start 2", "end 2"]);
  });

  it("syncs different directories independently and starts afresh once idle", async () => {
    const { fs, syncs } = slowSyncFs();
    await Promise.all([syncDirectory(fs, "/a"), syncDirectory(fs, "/b")]);
    expect(syncs()).toBe(2);
    await syncDirectory(fs, "/a");
    expect(syncs()).toBe(3);
  });

  it("reports a failing sync to every caller sharing it", async () => {
    const fs = {
      open: async () => ({
        sync: async () => {
          throw Object.assign(new Error("EIO"), { code: "EIO" });
        },
        close: async () => {},
      }),
    } as unknown as FsPromises;
    const results = await Promise.allSettled([
      syncDirectory(fs, "/x"),
      syncDirectory(fs, "/x"),
      syncDirectory(fs, "/x"),
    ]);
    expect(results.map((result) => result.status)).toEqual(["rejected", "rejected", "rejected"]);
  });
});
