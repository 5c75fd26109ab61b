import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { renderDocument } from "@pixport/testing";
import { afterEach, describe, expect, it } from "vitest";
import { call, photo, upload } from "./harness.js";

/**
 * The prebuilt server's launcher (`packages/server/bin/pixport-serve`, what `pnpm start` runs):
 * tcmalloc preloaded when the system has it, the system malloc otherwise or when asked, clear
 * errors for a missing or unknown choice, and the processes the server starts kept off the
 * preload. The machine needs Debian's libtcmalloc-minimal4 (`.ci/run` installs it).
 */

const LAUNCHER = fileURLToPath(new URL("../../packages/server/bin/pixport-serve", import.meta.url));
const TCMALLOC = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
  .map((dir) => path.join(dir, "libtcmalloc_minimal.so.4"))
  .find((file) => existsSync(file));

const started: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  }
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** Runs the launcher; resolves with the banner's URL, the live key and the malloc it names, or the exit. */
async function launch(environment: Record<string, string>) {
  const dataDir = await tempDir("pixport-allocator-data-");
  const child = spawn("sh", [LAUNCHER, "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir], {
    env: { ...process.env, PIXPORT_LOG: "false", ...environment },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  return new Promise<
    | { kind: "running"; child: ChildProcess; url: string; key: string; malloc: string }
    | { kind: "exited"; code: number | null; output: string }
  >((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner: ${output}`)), 30_000);
    const check = () => {
      const banner = /listening on (http:\/\/\S+) \(data: .*, malloc: (\w+)\)/.exec(output);
      const key = /live key:.*\n\s+(\S+)/.exec(output);
      if (banner !== null && key !== null) {
        clearTimeout(timer);
        resolve({
          kind: "running",
          child,
          url: banner[1] as string,
          key: key[1] as string,
          malloc: banner[2] as string,
        });
      }
    };
    child.stdout.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ kind: "exited", code, output });
    });
  });
}

const mapsOf = (pid: number) => readFileSync(`/proc/${pid}/maps`, "utf8");

/** The tesseract processes started by `pid` (read from /proc). */
function tesseractChildren(pid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        return comm === "tesseract" && Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("pixport-serve: the prebuilt server's allocator", () => {
  it("needs tcmalloc on this machine (Debian: apt-get install libtcmalloc-minimal4; .ci/run does)", () => {
    expect(TCMALLOC).toBeDefined();
  });

  it("preloads tcmalloc when the system has it, serves, and starts its own processes without it", async () => {
    const libraries = await tempDir("pixport-allocator-lib-");
    await symlink(TCMALLOC as string, path.join(libraries, "libtcmalloc_minimal.so.4"));
    const running = await launch({ PIXPORT_ALLOCATOR_DIRS: libraries, PIXPORT_OCR_ENGINE: "native" });
    expect(running.kind).toBe("running");
    if (running.kind !== "running") return;
    expect(running.malloc).toBe("tcmalloc");
    const pid = running.child.pid as number;
    expect(mapsOf(pid)).toContain("libtcmalloc_minimal.so.4");
    // It serves: an upload and a resize.
    const image = await upload(running.url, running.key, await photo(640, 480));
    const resized = await call(running.url, "POST", `/v1/images/${image.id}/resize`, {
      key: running.key,
      json: { width: 320 },
    });
    expect(resized.status).toBe(201);
    expect(resized.json.width).toBe(320);
    // The native OCR engine's tesseract (resident after the page) runs on the system malloc.
    const document = await renderDocument(
      {
        name: "malloc",
        width: 1000,
        blocks: [{ kind: "paragraph", lines: ["Children keep the system malloc."] }],
      },
      { format: "png", scale: 1 },
    );
    const page = await upload(running.url, running.key, document.data, "page");
    const read = await call(running.url, "POST", `/v1/images/${page.id}/extract-formatted-text`, {
      key: running.key,
      json: { format: "plain" },
    });
    expect(read.status).toBe(201);
    expect(read.json.content).toContain("system malloc");
    const children = tesseractChildren(pid);
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) {
      expect(mapsOf(child)).not.toContain("libtcmalloc");
      expect(readFileSync(`/proc/${child}/environ`, "utf8").split("\0")).not.toContainEqual(
        expect.stringMatching(/^(LD_PRELOAD|PIXPORT_PRELOADED)=/),
      );
    }
  }, 90_000);

  it("runs on the system malloc where tcmalloc is missing, or when PIXPORT_ALLOCATOR=system", async () => {
    const empty = await tempDir("pixport-allocator-empty-");
    const missing = await launch({ PIXPORT_ALLOCATOR_DIRS: empty });
    expect(missing.kind === "running" && missing.malloc).toBe("system");
    if (missing.kind === "running") expect(mapsOf(missing.child.pid as number)).not.toContain("libtcmalloc");
    const libraries = await tempDir("pixport-allocator-lib-");
    await symlink(TCMALLOC as string, path.join(libraries, "libtcmalloc_minimal.so.4"));
    const declined = await launch({ PIXPORT_ALLOCATOR_DIRS: libraries, PIXPORT_ALLOCATOR: "system" });
    expect(declined.kind === "running" && declined.malloc).toBe("system");
  }, 90_000);

  it("takes a malloc library by path, and refuses a missing or unknown choice with exit 2", async () => {
    const byPath = await launch({ PIXPORT_ALLOCATOR: TCMALLOC as string });
    expect(byPath.kind === "running" && byPath.malloc).toBe("tcmalloc");
    const empty = await tempDir("pixport-allocator-empty-");
    const required = await launch({ PIXPORT_ALLOCATOR: "tcmalloc", PIXPORT_ALLOCATOR_DIRS: empty });
    expect(required).toMatchObject({ kind: "exited", code: 2 });
    expect(required.kind === "exited" && required.output).toMatch(
      /libtcmalloc_minimal\.so\.4 is not in .*libtcmalloc-minimal4/,
    );
    const absent = await launch({ PIXPORT_ALLOCATOR: path.join(empty, "nothing.so") });
    expect(absent).toMatchObject({ kind: "exited", code: 2 });
    expect(absent.kind === "exited" && absent.output).toMatch(/no such file/);
    const unknown = await launch({ PIXPORT_ALLOCATOR: "fast" });
    expect(unknown).toMatchObject({ kind: "exited", code: 2 });
    expect(unknown.kind === "exited" && unknown.output).toMatch(
      /must be auto, system, tcmalloc or the absolute path/,
    );
  }, 90_000);
});
