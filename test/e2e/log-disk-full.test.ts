import { closeSync, existsSync, openSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { removeDir, spawnPrebuiltServer, stopPrebuiltServer, tempDataDir } from "./harness.js";

// /dev/full answers every write with ENOSPC: the server's log is on a disk that has no room left.
// pino's destination re-emits the failed write as an `error` event; unhandled, Node exits.
describe("a log that cannot be written", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it("never kills the server nor stops it from exiting: write errors are counted, lines dropped", async () => {
    expect(existsSync("/dev/full"), "this test needs Linux's /dev/full").toBe(true);
    const dataDir = await tempDataDir();
    cleanup.push(() => removeDir(dataDir));
    const full = openSync("/dev/full", "w");
    const node = await spawnPrebuiltServer(
      dataDir,
      { PIXPORT_LOG: "true", PIXPORT_LOG_LEVEL: "info", PIXPORT_METRICS: "true" },
      { stderr: full },
    ).finally(() => closeSync(full));
    const { child, url } = node;
    cleanup.push(() => stopPrebuiltServer(node));
    // Node sets these before it emits `exit`.
    const exited = () => child.exitCode ?? child.signalCode ?? undefined;
    // Every answer writes an access line; 4xx answers write warnings.
    for (let round = 0; round < 20; round++) {
      const answers = await Promise.all([
        fetch(`${url}/v1/images`),
        fetch(`${url}/v1/images/image_nosuchimage000000000000`, { headers: { "x-api-key": "sk_test_nope" } }),
        fetch(`${url}/healthz`),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual([401, 401, 200]);
      await Promise.all(answers.map((answer) => answer.arrayBuffer()));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(exited()).toBeUndefined();
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const errors = /^pixport_log_write_errors_total (\d+)/m.exec(metrics);
    expect(errors, metrics.slice(0, 500)).not.toBeNull();
    expect(Number(errors?.[1])).toBeGreaterThan(0);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(exited()).toBeUndefined();
    // And it still stops: pino's flush at exit must not retry the failing write forever.
    const code = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await code).toBe(0);
  }, 60_000);
});
