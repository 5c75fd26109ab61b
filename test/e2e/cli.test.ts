import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, decode, halves, photo, removeDir, tempDataDir, upload, uploadForm } from "./harness.js";

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../packages/server/dist/cli.js");
const run = promisify(execFile);

interface Started {
  child: ChildProcess;
  url: string;
  firstKey: string | undefined;
  liveKey: string | undefined;
  output: () => string;
}

/** Starts the built `pixport serve` on a random port and waits for its banner. */
async function serve(dataDir: string, env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(
    process.execPath,
    [CLI, "serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir],
    {
      env: { ...process.env, PIXPORT_LOG: "false", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr!.on("data", (chunk) => {
    output += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner: ${output}`)), 20_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (
        match &&
        (output.includes("shown only once") || /\n/.test(output.slice(output.indexOf(match[1]!))))
      ) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const firstKey = /^\s+(test_[A-Za-z0-9]{32})$/m.exec(output)?.[1];
  const liveKey = /^\s+(live_[A-Za-z0-9]{32})$/m.exec(output)?.[1];
  return { child, url, firstKey, liveKey, output: () => output };
}

function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

describe("the prebuilt `pixport` CLI", () => {
  let dataDir: string;
  beforeAll(async () => {
    if (!existsSync(CLI))
      throw new Error(`${CLI} is missing: run \`pnpm build\` first (the test script does).`);
    dataDir = await tempDataDir();
  });
  afterAll(async () => {
    await removeDir(dataDir);
  });

  it("prints a live and a test key on first start, keeps everything across a restart, and drains on SIGTERM", async () => {
    const first = await serve(dataDir);
    expect(first.firstKey).toMatch(/^test_/);
    expect(first.liveKey).toMatch(/^live_/);
    // The keys come last, after the listening line.
    expect(first.output().trimEnd().split("\n").at(-1)).toContain(first.firstKey!);
    // The listening line names the OCR engine "auto" chose: the tesseract executable (CI installs it).
    expect(first.output()).toMatch(/listening on \S+ \(data: .*, ocr: native, malloc: \w+\)/);
    // The live key's account has no monthly cap: the operator owns the server.
    const shown = await run(process.execPath, [
      CLI,
      "accounts",
      "show",
      "--account",
      "default",
      "--data-dir",
      dataDir,
    ]);
    expect(shown.stdout).toContain("upgraded");
    const live = await call(first.url, "GET", "/v1/images", { key: first.liveKey! });
    expect(live.status).toBe(200);
    expect(live.headers.get("x-ratelimit-limit")).toBe("100");
    const key = first.firstKey!;
    const image = await upload(first.url, key, await halves(64, 32, [255, 0, 0], [0, 0, 255]), "persist");
    const derived = (
      await call(first.url, "POST", `/v1/images/${image.id}/mirror`, { key, json: { mode: "both" } })
    ).json;
    const published = await call(first.url, "POST", `/v1/images/${derived.id}/publish`, { key });
    expect(published.status).toBe(201);
    const listedBefore = (await call(first.url, "GET", "/v1/images", { key })).json;

    // An in-flight request survives SIGTERM: start a slow blur, then signal.
    const big = await upload(first.url, key, await photo(1600, 1200), "big");
    const inFlight = call(first.url, "POST", `/v1/images/${big.id}/blur`, { key, json: { sigma: 60 } });
    await new Promise((resolve) => setTimeout(resolve, 30));
    first.child.kill("SIGTERM");
    const finished = await inFlight;
    expect(finished.status).toBe(201);
    expect(await exitCode(first.child)).toBe(0);

    const second = await serve(dataDir);
    try {
      expect(second.firstKey).toBeUndefined();
      expect(second.liveKey).toBeUndefined();
      const listedAfter = (await call(second.url, "GET", "/v1/images", { key })).json;
      expect(listedAfter.data.map((item: { id: string }) => item.id)).toContain(finished.json.id);
      for (const item of listedBefore.data)
        expect(listedAfter.data.map((after: { id: string }) => after.id)).toContain(item.id);
      const download = await call(second.url, "GET", `/v1/images/${image.id}/download`, { key });
      expect(download.status).toBe(200);
      expect((await decode(download.bytes)).width).toBe(64);
      const publicUrl = new URL(published.json.url);
      const served = await fetch(`${second.url}${publicUrl.pathname}`);
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("image/png");
    } finally {
      second.child.kill("SIGTERM");
      await exitCode(second.child);
    }
  }, 60_000);

  it("creates keys from the CLI that a running server accepts, and lists them without secrets", async () => {
    const running = await serve(dataDir);
    try {
      const created = await run(process.execPath, [
        CLI,
        "keys",
        "create",
        "--kind",
        "live",
        "--account",
        "cli-account",
        "--data-dir",
        dataDir,
      ]);
      const key = created.stdout.trim();
      expect(key).toMatch(/^live_[A-Za-z0-9]{32}$/);
      const response = await call(running.url, "GET", "/v1/images", { key });
      expect(response.status).toBe(200);
      expect(response.json.data).toEqual([]);
      const listed = await run(process.execPath, [CLI, "keys", "list", "--data-dir", dataDir]);
      expect(listed.stdout).toContain("cli-account");
      expect(listed.stdout).not.toContain(key);
      // A per-key override and a revocation made by the CLI reach the running server at once (the
      // key already made one request above, so 3 per minute leaves two).
      const id =
        listed.stdout
          .split("\n")
          .find((line) => line.includes("cli-account"))
          ?.split("\t")[0] ?? "";
      await run(process.execPath, [
        CLI,
        "keys",
        "limit",
        "--id",
        id,
        "--per-minute",
        "3",
        "--data-dir",
        dataDir,
      ]);
      const statuses: string[] = [];
      for (let index = 0; index < 3; index++) {
        const limited = await call(running.url, "GET", "/v1/images", { key });
        statuses.push(`${limited.status} ${limited.headers.get("x-ratelimit-limit")}`);
      }
      expect(statuses).toEqual(["200 3", "200 3", "429 3"]);
      await run(process.execPath, [CLI, "keys", "revoke", "--id", id, "--data-dir", dataDir]);
      // The trial quota holds on the embedded server, and an upgrade made by the CLI lifts it.
      const trialKey = (
        await run(process.execPath, [
          CLI,
          "keys",
          "create",
          "--kind",
          "live",
          "--account",
          "trial-cli",
          "--data-dir",
          dataDir,
        ])
      ).stdout.trim();
      const tiny = await halves(4, 4, [1, 1, 1], [2, 2, 2]);
      const uploads: number[] = [];
      for (let index = 0; index < 26; index++) {
        uploads.push(
          (
            await call(running.url, "POST", "/v1/images/upload", {
              key: trialKey,
              form: uploadForm("t", tiny),
            })
          ).status,
        );
      }
      expect(uploads.filter((status) => status === 201)).toHaveLength(25);
      expect(uploads[25]).toBe(403);
      await run(process.execPath, [
        CLI,
        "accounts",
        "upgrade",
        "--account",
        "trial-cli",
        "--data-dir",
        dataDir,
      ]);
      expect(
        (await call(running.url, "POST", "/v1/images/upload", { key: trialKey, form: uploadForm("t", tiny) }))
          .status,
      ).toBe(201);
      expect((await call(running.url, "GET", "/v1/images", { key })).status).toBe(401);
      const refused = await run(process.execPath, [
        CLI,
        "keys",
        "create",
        "--kind",
        "gold",
        "--account",
        "x",
        "--data-dir",
        dataDir,
      ]).catch((error: { code: number; stderr: string }) => error);
      expect((refused as { code: number }).code).toBe(2);
    } finally {
      running.child.kill("SIGTERM");
      await exitCode(running.child);
    }
  }, 60_000);

  it("keeps the trial quota across a restart and a kill -9, and `accounts show` reports it", async () => {
    const quotaDir = await tempDataDir();
    const cli = async (...args: string[]) =>
      (await run(process.execPath, [CLI, ...args, "--data-dir", quotaDir])).stdout.trim();
    const shown = async () =>
      Number(/(\d+) images used/.exec(await cli("accounts", "show", "--account", "t"))?.[1]);
    const tiny = await halves(4, 4, [1, 1, 1], [2, 2, 2]);
    const uploadAll = async (url: string, key: string, count: number) => {
      const statuses: number[] = [];
      for (let index = 0; index < count; index++) {
        statuses.push(
          (await call(url, "POST", "/v1/images/upload", { key, form: uploadForm("q", tiny) })).status,
        );
      }
      return statuses;
    };
    let running = await serve(quotaDir);
    try {
      const key = await cli("keys", "create", "--kind", "live", "--account", "t");
      expect(await uploadAll(running.url, key, 10)).toEqual(Array(10).fill(201));
      // Another process (the CLI) reads what the server counted.
      expect(await shown()).toBe(10);
      running.child.kill("SIGTERM");
      await exitCode(running.child);
      running = await serve(quotaDir);
      expect(await uploadAll(running.url, key, 5)).toEqual(Array(5).fill(201));
      // kill -9 while uploads are in flight: a granted unit is on disk before the image is stored,
      // so a crash can over-count an unfinished upload but never gives one away.
      const inFlight = Array.from({ length: 4 }, () =>
        call(running.url, "POST", "/v1/images/upload", { key, form: uploadForm("q", tiny) }).catch(
          () => null,
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      running.child.kill("SIGKILL");
      await exitCode(running.child);
      await Promise.all(inFlight);
      const afterCrash = await shown();
      running = await serve(quotaDir);
      const listed = (await call(running.url, "GET", "/v1/images?take=100", { key })).json.data.length;
      expect(afterCrash).toBeGreaterThanOrEqual(listed);
      expect(listed).toBeGreaterThanOrEqual(15);
      const remaining = 25 - afterCrash;
      const statuses = await uploadAll(running.url, key, remaining + 1);
      expect(statuses.filter((status) => status === 201)).toHaveLength(remaining);
      expect(statuses.at(-1)).toBe(403);
      expect(await shown()).toBe(25);
    } finally {
      running.child.kill("SIGKILL");
      await exitCode(running.child);
      await removeDir(quotaDir);
    }
  }, 90_000);

  it("names tesseract.js as the OCR engine when asked for it, or when no tesseract executable is on PATH", async () => {
    const environments: Record<string, string>[] = [{ PIXPORT_OCR_ENGINE: "wasm" }, { PATH: "/nonexistent" }];
    for (const env of environments) {
      const dir = await tempDataDir();
      const started = await serve(dir, env);
      try {
        expect(started.output(), JSON.stringify(env)).toMatch(
          /listening on \S+ \(data: .*, ocr: wasm, malloc: \w+\)/,
        );
      } finally {
        started.child.kill("SIGTERM");
        await exitCode(started.child);
        await removeDir(dir);
      }
    }
  }, 60_000);

  it("has --version, per-command help, errors that name the flag, and keys list with overrides and state", async () => {
    const version = await run(process.execPath, [CLI, "--version"]);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const help = await run(process.execPath, [CLI, "keys", "create", "--help"]);
    expect(help.stdout).toContain("--kind <kind>");
    expect(help.stdout).toContain("--account <name>");
    expect(help.stdout).not.toContain("serve");
    const badPort = await run(process.execPath, [CLI, "serve", "--port", "abc"]).catch(
      (error: { stderr: string; code: number }) => error,
    );
    expect((badPort as { code: number }).code).toBe(2);
    expect((badPort as { stderr: string }).stderr).toContain(
      `port must be an integer between 0 and 65535, received "abc"`,
    );
    const listDir = await tempDataDir();
    try {
      const created = (
        await run(process.execPath, [
          CLI,
          "keys",
          "create",
          "--kind",
          "live",
          "--account",
          "lister",
          "--data-dir",
          listDir,
        ])
      ).stdout;
      expect(created.endsWith("\n")).toBe(true);
      const id = (await run(process.execPath, [CLI, "keys", "list", "--data-dir", listDir])).stdout.split(
        "\t",
      )[0]!;
      await run(process.execPath, [
        CLI,
        "keys",
        "limit",
        "--id",
        id,
        "--per-minute",
        "7",
        "--data-dir",
        listDir,
      ]);
      await run(process.execPath, [CLI, "keys", "revoke", "--id", id, "--data-dir", listDir]);
      const listed = (await run(process.execPath, [CLI, "keys", "list", "--data-dir", listDir])).stdout
        .trim()
        .split("\t");
      expect(listed.slice(-2)).toEqual(["7/min", "revoked"]);
    } finally {
      await removeDir(listDir);
    }
  });
});
