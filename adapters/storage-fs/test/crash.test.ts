import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as nodeFs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createFsBlobStore, createFsImageRepository } from "../src/index.js";
import { listFiles, makeTempDirectory, removeDirectory } from "./helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const writer = path.join(here, "fixtures", "crash-writer.ts");
const repositoryRoot = path.resolve(here, "../../..");
const BLOB_SIZE = 256 * 1024;

let root: string;

beforeEach(async () => {
  root = await makeTempDirectory("pixport-crash-");
});
afterEach(async () => {
  await removeDirectory(root);
});

/** Starts a writer on `directory`, waits until it is writing, lets it run `runForMs`, then kills it with SIGKILL. */
async function runAndKill(directory: string, run: number, runForMs: number): Promise<void> {
  const child = spawn(
    process.execPath,
    ["--conditions=pixport-source", "--import", "tsx", writer, directory, String(run)],
    { cwd: repositoryRoot, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("writing")) resolve();
    });
    void exited.then(() => reject(new Error(`The writer exited before writing: ${stderr}`)));
  });
  await new Promise((resolve) => setTimeout(resolve, runForMs));
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  expect(stderr).toBe("");
}

/** Checks the crash invariants on what one writer left in `directory`, then sweeps it. */
async function verify(directory: string): Promise<void> {
  const blobRoot = path.join(directory, "blobs");
  const files = await listFiles(blobRoot);
  const dataFiles = files.filter((file) => !file.endsWith("~tmp") && !file.endsWith("~meta.json"));
  expect(dataFiles.length).toBeGreaterThan(0);
  for (const file of dataFiles) {
    const data = await nodeFs.readFile(path.join(blobRoot, file));
    expect(data.byteLength, file).toBe(BLOB_SIZE);
    const digest = createHash("sha256").update(data.subarray(32)).digest();
    expect(digest.equals(data.subarray(0, 32)), `${file} is complete`).toBe(true);
    // The sidecar is written before the bytes, so complete bytes always have their metadata.
    expect(files).toContain(`${path.posix.dirname(file)}/.${path.posix.basename(file)}~meta.json`);
  }

  const warnings: unknown[] = [];
  const images = createFsImageRepository({
    root: path.join(directory, "metadata"),
    logger: { warn: (message) => warnings.push(message) },
  });
  const records = await images.listCreatedBefore({
    stage: "test",
    createdBefore: "9999-01-01T00:00:00.000Z",
    limit: 100_000,
  });
  expect(warnings).toEqual([]);
  expect(records.some((record) => record.id.startsWith("image_r1"))).toBe(true);
  expect(records.some((record) => record.id.startsWith("image_r2"))).toBe(true);
  const blobs = createFsBlobStore({ root: blobRoot });
  for (const record of records) expect(await blobs.stat(record.blobKey), record.id).not.toBeNull();

  await blobs.sweepTemporaryFiles({ olderThanMs: 0 });
  await images.sweepTemporaryFiles({ olderThanMs: 0 });
  const after = [...(await listFiles(blobRoot)), ...(await listFiles(path.join(directory, "metadata")))];
  expect(after.filter((file) => file.endsWith("~tmp"))).toEqual([]);
}

it("never leaves a partial file under a final name when writers are killed mid-way", async () => {
  // Three writers side by side, each killed at a different moment, twice: the second run starts on
  // what the first left, so recovery after a crash is part of the test. Six kills make it likely
  // that at least one lands inside a blob write.
  const directories = [0, 1, 2].map((index) => path.join(root, `writer-${index}`));
  for (const run of [1, 2]) {
    await Promise.all(
      directories.map((directory, index) => runAndKill(directory, run, 60 + index * 45 + run * 10)),
    );
  }
  for (const directory of directories) await verify(directory);
  // Six tsx child processes start and compile before their kills; on a busy 2-core runner that
  // alone took most of the default 30 s.
}, 120_000);
