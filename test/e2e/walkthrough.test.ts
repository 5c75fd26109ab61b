import { execFile } from "node:child_process";
import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
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
async function walkthrough(): Promise<string> {
  const readme = await readFile(path.join(root, "README.md"), "utf8");
  const block = /<!-- walkthrough:start -->\n```sh\n([\s\S]*?)```\n<!-- walkthrough:end -->/.exec(
    readme,
  )?.[1];
  if (block === undefined) throw new Error("README.md has no walk-through block between its markers");
  return block;
}

/**
 * The status each curl call of the block documents: the `# NNN` its command ends with (a command
 * continued with `\` ends on its last line). Every curl command must document one.
 */
function documentedStatuses(block: string): number[] {
  const commands = block.replace(/\\\n/g, " ").split("\n");
  const statuses: number[] = [];
  for (const command of commands) {
    // A shell comment starts with a `#` that begins a word (`"#fff"` in a body is not one).
    const comment = /(?:^|\s)#(?:\s|$)/.exec(command);
    const code = comment === null ? command : command.slice(0, comment.index);
    if (!/\bcurl\b/.test(code)) continue;
    const status = /^\s*#\s+(\d{3})\b/.exec(command.slice(code.length))?.[1];
    if (status === undefined)
      throw new Error(`a curl call of the walk-through documents no status: ${command}`);
    statuses.push(Number(status));
  }
  return statuses;
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

  it("runs top to bottom verbatim with the printed live key, every call answering the status it documents", async () => {
    await waitUntil(() => /^\s+live_[A-Za-z0-9]{32}$/m.test(node.output()), "the first-start keys");
    const key = /^\s+(live_[A-Za-z0-9]{32})$/m.exec(node.output())![1]!;
    const block = await walkthrough();
    const expected = documentedStatuses(block);
    expect(expected.length).toBeGreaterThanOrEqual(25);

    // A `curl` first on PATH that records each call's response head, then runs the real curl with
    // the reader's arguments unchanged (the block itself runs verbatim).
    const { stdout: realCurl } = await run("bash", ["-c", "command -v curl"]);
    const shimDir = path.join(dataDir, "shim");
    const heads = path.join(dataDir, "heads");
    await mkdir(shimDir, { recursive: true });
    await mkdir(heads, { recursive: true });
    await writeFile(
      path.join(shimDir, "curl"),
      [
        "#!/usr/bin/env bash",
        `n=$(ls "${heads}" | wc -l)`,
        `exec "${realCurl.trim()}" -D "${heads}/$(printf %03d "$n").head" "$@"`,
        "",
      ].join("\n"),
    );
    await chmod(path.join(shimDir, "curl"), 0o755);

    // `set -e`: any curl -f that meets an HTTP error (or a missing file) stops the script.
    const { stdout, stderr } = await run("bash", ["-e", "-c", block], {
      cwd: root,
      env: { ...process.env, PATH: `${shimDir}:${process.env.PATH}`, KEY: key, API: node.url },
      timeout: 90_000,
    });
    expect(stderr).toBe("");

    const files = (await readdir(heads)).sort();
    const statuses = await Promise.all(
      files.map(async (file) => {
        const lines = (await readFile(path.join(heads, file), "utf8")).split("\r\n");
        const statusLines = lines.filter((line) => /^HTTP\/[\d.]+ \d{3}/.test(line));
        return Number(statusLines.at(-1)?.split(" ")[1]);
      }),
    );
    expect(statuses).toEqual(expected);

    // What the calls show: Images from the uploads and transforms, the fused one's name, the three
    // model calls' contract error, the published URL on the server's own base, then its removal.
    expect((stdout.match(/"id":"image_[a-z0-9]{24}"/g) ?? []).length).toBeGreaterThanOrEqual(14);
    expect(stdout).toContain('"name":"thumb"');
    expect(stdout.match(/"code":"MODEL_NOT_CONFIGURED"/g)).toHaveLength(3);
    expect(stdout).toMatch(/"url":"http:\/\/127\.0\.0\.1:\d+\/images\/image_[a-z0-9]{24}\.jpg"/);
    expect(stdout).toContain('"url":null');
    expect(stdout).toContain('"format":"plain","content":');
    expect(stdout.trimEnd().endsWith("}404\n404")).toBe(true);
  }, 120_000);
});
