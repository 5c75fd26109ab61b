import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { waitUntil } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type PrebuiltNode,
  removeDir,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  tempDataDir,
} from "./harness.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

/** The README's walk-through block, exactly as a reader copies it. */
function walkthrough(): string {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const block = /<!-- walkthrough:start -->\n```sh\n([\s\S]*?)```\n<!-- walkthrough:end -->/.exec(
    readme,
  )?.[1];
  if (block === undefined) throw new Error("README.md has no walk-through block between its markers");
  return block;
}

describe("the README walk-through", () => {
  let dataDir: string;
  let node: PrebuiltNode;
  beforeAll(async () => {
    dataDir = await tempDataDir();
    node = await spawnPrebuiltServer(dataDir);
  });
  afterAll(async () => {
    await stopPrebuiltServer(node);
    await removeDir(dataDir);
  });

  it("runs top to bottom verbatim with the printed live key, without a 4xx it does not show", async () => {
    await waitUntil(() => /^\s+live_[A-Za-z0-9]{32}$/m.test(node.output()), "the first-start keys");
    const key = /^\s+(live_[A-Za-z0-9]{32})$/m.exec(node.output())![1]!;
    // `set -e`: any curl -f that meets an HTTP error (or a missing file) stops the script.
    const { stdout, stderr } = await run("bash", ["-e", "-c", walkthrough()], {
      cwd: root,
      env: { ...process.env, KEY: key, API: node.url },
      timeout: 60_000,
    });
    expect(stderr).toBe("");
    // The answers it shows: Images from the transforms (8 singles + 1 fused), publish and unpublish.
    const images = stdout.match(/"id":"image_[a-z0-9]{24}"/g) ?? [];
    expect(images.length).toBeGreaterThanOrEqual(12);
    expect(stdout).toContain('"name":"thumb"');
    expect(stdout).toMatch(/"url":"http:\/\/127\.0\.0\.1:\d+\/images\/image_[a-z0-9]{24}\.jpg"/);
    expect(stdout).toContain('"url":null');
    // The unpublished copy answers 404 (printed by the `-w '%{http_code}'` line; delete prints nothing).
    expect(stdout.trimEnd().endsWith("}404")).toBe(true);
  }, 90_000);
});
