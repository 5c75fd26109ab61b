import { waitUntil } from "@pixport/testing";
import { afterEach, describe, expect, it } from "vitest";
import {
  type PrebuiltNode,
  photo,
  removeDir,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
  upload,
} from "./harness.js";

/**
 * The prebuilt server gives the allocator's free memory back once its memory budget has been idle
 * after a large job (`releaseFreeMemory`, `@pixport/allocator`), and says so in /metrics. Started
 * here without the launcher, so on glibc's malloc.
 */

const started: { node: PrebuiltNode; dataDir: string }[] = [];
afterEach(async () => {
  for (const { node, dataDir } of started.splice(0)) {
    await stopPrebuiltServer(node);
    await removeDir(dataDir);
  }
});

async function start(environment: Record<string, string>) {
  const dataDir = await tempDataDir();
  const node = await spawnPrebuiltServer(dataDir, environment);
  started.push({ node, dataDir });
  await waitUntil(() => /live key:.*\n\s+\S+/.test(node.output()), "the first-start keys");
  const key = /live key:.*\n\s+(\S+)/.exec(node.output())?.[1] as string;
  return { node, key };
}

const releasesOf = async (node: PrebuiltNode) =>
  /^pixport_memory_releases_total\{allocator="(\w+)"\} (\d+)/m.exec(
    await (await fetch(`${node.url}/metrics`)).text(),
  );

describe("releaseFreeMemory", () => {
  it("releases glibc's free memory after a large upload, not after a small one, and not at all when off", async () => {
    const { node, key } = await start({});
    await upload(node.url, key, await photo(64, 48));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await releasesOf(node))?.slice(1)).toEqual(["glibc", "0"]);
    // 1600 x 1200: a job of about 50 MB against the budget, above releaseAfterBytes (8 MiB).
    await upload(node.url, key, await photo(1600, 1200));
    await expect
      .poll(async () => Number((await releasesOf(node))?.[2]), { timeout: 5_000 })
      .toBeGreaterThanOrEqual(1);

    const off = await start({ PIXPORT_RELEASE_FREE_MEMORY: "off" });
    await upload(off.node.url, off.key, await photo(1600, 1200));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await releasesOf(off.node)).toBeNull();
  }, 60_000);
});
