import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import {
  CLI,
  call,
  halves,
  newKey,
  removeDir,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
  upload,
  useServer,
} from "./harness.js";

const run = promisify(execFile);

// Publish, unpublish and delete of one image, racing from two connections, many times: after both
// calls settle, the public copy is served if and only if the record says published, and nothing
// is served after a delete.

describe("publish, unpublish and delete racing on one node", () => {
  const handle = useServer();
  const TRIALS = 40;

  async function served(id: string): Promise<number> {
    return (await fetch(`${handle.url}/images/${id}.png`)).status;
  }

  it("never serves an image after delete answered, whatever publish did", async () => {
    const key = await newKey(handle.server, "live", "race-delete");
    const png = await halves(8, 8, [255, 0, 0], [0, 0, 255]);
    for (let trial = 0; trial < TRIALS; trial++) {
      const image = await upload(handle.url, key, png, `d${trial}`);
      const publishCall = () => call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key });
      const deleteCall = () => call(handle.url, "DELETE", `/v1/images/${image.id}`, { key });
      // Alternate which request leaves first.
      const [publish, remove] =
        trial % 2 === 0
          ? await Promise.all([publishCall(), deleteCall()])
          : await Promise.all([deleteCall(), publishCall()]).then(([d, p]) => [p, d] as const);
      expect(remove.status).toBe(204);
      expect([201, 404]).toContain(publish.status);
      expect((await call(handle.url, "GET", `/v1/images/${image.id}`, { key })).status).toBe(404);
      expect(await served(image.id)).toBe(404);
    }
  }, 60_000);

  it("serves the copy iff the record says published after publish races unpublish", async () => {
    const key = await newKey(handle.server, "live", "race-publish");
    const png = await halves(8, 8, [0, 255, 0], [0, 0, 255]);
    const outcomes = new Set<string>();
    for (let trial = 0; trial < TRIALS; trial++) {
      const image = await upload(handle.url, key, png, `p${trial}`);
      if (trial % 2 === 0) await call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key });
      const publish = () => call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key });
      const unpublish = () => call(handle.url, "POST", `/v1/images/${image.id}/unpublish`, { key });
      // Which request leaves first alternates every two trials (so over both starting states):
      // each order is sent, and the server decides how they interleave.
      const answers = await Promise.all(
        Math.floor(trial / 2) % 2 === 0 ? [publish(), unpublish()] : [unpublish(), publish()],
      );
      for (const answer of answers) expect(answer.status).toBe(201);
      const record = (await call(handle.url, "GET", `/v1/images/${image.id}`, { key })).json;
      const status = await served(image.id);
      expect(status).toBe(record.url === null ? 404 : 200);
      outcomes.add(record.url === null ? "private" : "public");
    }
    // Both orders happened: the test exercised real interleavings, not one fixed order.
    expect([...outcomes].sort()).toEqual(["private", "public"]);
  }, 60_000);
});

describe("kill -9 during publish and unpublish, then restart", () => {
  it("never leaves a public copy of an image whose record is private or gone; publishing again repairs the rest", async () => {
    const dataDir = await tempDataDir();
    const cli = async (...args: string[]) =>
      (await run(process.execPath, [CLI, ...args, "--data-dir", dataDir])).stdout.trim();
    try {
      await cli("accounts", "upgrade", "--account", "crash");
      const key = await cli("keys", "create", "--kind", "live", "--account", "crash");
      let node = await spawnPrebuiltServer(dataDir);
      const png = await halves(8, 8, [255, 0, 0], [0, 0, 255]);
      const ids: string[] = [];
      for (let index = 0; index < 6; index++) ids.push((await upload(node.url, key, png, `k${index}`)).id);
      for (let cycle = 0; cycle < 6; cycle++) {
        // A storm of publish/unpublish/delete on every image, cut off by SIGKILL.
        const storm = ids.flatMap((id, index) => [
          call(node.url, "POST", `/v1/images/${id}/publish`, { key }).catch(() => null),
          call(node.url, "POST", `/v1/images/${id}/unpublish`, { key }).catch(() => null),
          ...(index === cycle
            ? [call(node.url, "DELETE", `/v1/images/${id}`, { key }).catch(() => null)]
            : []),
          call(node.url, "POST", `/v1/images/${id}/publish`, { key }).catch(() => null),
        ]);
        await new Promise((resolve) => setTimeout(resolve, 5 + cycle * 7));
        const exited = new Promise((resolve) => node.child.once("exit", resolve));
        node.child.kill("SIGKILL");
        await Promise.all([exited, ...storm]);
        node = await spawnPrebuiltServer(dataDir);
        for (const id of ids) {
          const record = await call(node.url, "GET", `/v1/images/${id}`, { key });
          const served = (await fetch(`${node.url}/images/${id}.png`)).status;
          // The privacy invariant holds right after the crash, before any repair.
          if (record.status === 404) expect(served, `${id} deleted but served`).toBe(404);
          else if (record.json.url === null) expect(served, `${id} private but served`).toBe(404);
          else if (served === 404) {
            // Published record, copy lost with the crash: publishing again (idempotent) repairs it.
            const repaired = await call(node.url, "POST", `/v1/images/${id}/publish`, { key });
            expect(repaired.status).toBe(201);
            expect((await fetch(`${node.url}/images/${id}.png`)).status).toBe(200);
          }
        }
      }
      await stopPrebuiltServer(node);
    } finally {
      await removeDir(dataDir);
    }
  }, 120_000);
});
