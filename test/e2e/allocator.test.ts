import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { childProcesses, renderDocument, waitUntil } from "@pixport/testing";
import { afterEach, describe, expect, it } from "vitest";
import {
  call,
  LAUNCHER,
  type PrebuiltNode,
  photo,
  spawnPrebuiltServer,
  stopPrebuiltServer,
  upload,
} from "./harness.js";

/**
 * The prebuilt server's launcher (`packages/server/bin/pixport-serve`, what `pnpm start` runs):
 * tcmalloc preloaded when the system has it, the system malloc otherwise or when asked, clear
 * errors for a missing or unknown choice, and the processes the server starts kept off the
 * preload. The machine needs Debian's libtcmalloc-minimal4 (`.ci/run` installs it).
 */

const TCMALLOC = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
  .map((dir) => path.join(dir, "libtcmalloc_minimal.so.4"))
  .find((file) => existsSync(file));

const started: PrebuiltNode[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const node of started.splice(0)) await stopPrebuiltServer(node);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** A directory holding (a link to) tcmalloc, for PIXPORT_ALLOCATOR_DIRS. */
async function withTcmalloc(): Promise<string> {
  const libraries = await tempDir("pixport-allocator-lib-");
  await symlink(TCMALLOC as string, path.join(libraries, "libtcmalloc_minimal.so.4"));
  return libraries;
}

/** The server through the launcher, and the malloc its banner names. */
async function launch(environment: Record<string, string>) {
  const node = await spawnPrebuiltServer(await tempDir("pixport-allocator-data-"), environment, {
    launcher: true,
  });
  started.push(node);
  const malloc = /listening on \S+ \(data: .*, malloc: (\w+)\)/.exec(node.output())?.[1];
  return { node, malloc, pid: node.child.pid as number };
}

/** The launcher with a choice that stops it before node starts: its exit status and message. */
function refused(environment: Record<string, string>) {
  const run = spawnSync("sh", [LAUNCHER, "--port", "0"], {
    env: { ...process.env, ...environment },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { status: run.status, stderr: run.stderr };
}

const mapsOf = (pid: number) => readFileSync(`/proc/${pid}/maps`, "utf8");

describe("pixport-serve: the prebuilt server's allocator", () => {
  it("needs tcmalloc on this machine (Debian: apt-get install libtcmalloc-minimal4; .ci/run does)", () => {
    expect(TCMALLOC).toBeDefined();
  });

  it("preloads tcmalloc when the system has it, serves, and starts its own processes without it", async () => {
    const { node, malloc, pid } = await launch({
      PIXPORT_ALLOCATOR_DIRS: await withTcmalloc(),
      PIXPORT_OCR_ENGINE: "native",
    });
    expect(malloc).toBe("tcmalloc");
    expect(mapsOf(pid)).toContain("libtcmalloc_minimal.so.4");
    await waitUntil(() => /live key:.*\n\s+\S+/.test(node.output()), "the first-start keys");
    const key = /live key:.*\n\s+(\S+)/.exec(node.output())?.[1] as string;
    // It serves: an upload and a resize.
    const image = await upload(node.url, key, await photo(640, 480));
    const resized = await call(node.url, "POST", `/v1/images/${image.id}/resize`, {
      key,
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
    const page = await upload(node.url, key, document.data, "page");
    const read = await call(node.url, "POST", `/v1/images/${page.id}/extract-formatted-text`, {
      key,
      json: { format: "plain" },
    });
    expect(read.status).toBe(201);
    expect(read.json.content).toContain("system malloc");
    // V8's young generation is capped on the default start too.
    const environment = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    expect(environment.find((entry) => entry.startsWith("NODE_OPTIONS="))).toContain(
      "--max-semi-space-size=1",
    );
    // V8's gc() is not exposed on the default start (a collection holds the event loop).
    expect(environment.find((entry) => entry.startsWith("NODE_OPTIONS="))).not.toContain("expose-gc");
    // tcmalloc's thread caches are capped at 16 MiB in all (its own default: 32 MiB).
    expect(environment).toContain("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES=16777216");
    // tcmalloc's free memory goes back to the system once the server is idle after a large job
    // (a 1600 x 1200 upload: about 50 MB against the memory budget; @pixport/allocator).
    await upload(node.url, key, await photo(1600, 1200));
    await expect
      .poll(async () => (await fetch(`${node.url}/metrics`)).text(), { timeout: 5_000 })
      .toMatch(/^pixport_memory_releases_total\{allocator="tcmalloc"\} [1-9]/m);
    // ...with no garbage collection on the default start.
    expect(await (await fetch(`${node.url}/metrics`)).text()).toMatch(
      /^pixport_memory_release_gc_seconds_total 0$/m,
    );
    const children = childProcesses({ name: "tesseract" }, pid);
    expect(children.length).toBeGreaterThan(0);
    for (const child of children) {
      expect(mapsOf(child)).not.toContain("libtcmalloc");
      expect(readFileSync(`/proc/${child}/environ`, "utf8").split("\0")).not.toContainEqual(
        expect.stringMatching(/^(LD_PRELOAD|PIXPORT_PRELOADED)=/),
      );
    }
  }, 90_000);

  it("runs on the system malloc where tcmalloc is missing, or when PIXPORT_ALLOCATOR=system", async () => {
    const missing = await launch({ PIXPORT_ALLOCATOR_DIRS: await tempDir("pixport-allocator-empty-") });
    expect(missing.malloc).toBe("system");
    expect(mapsOf(missing.pid)).not.toContain("libtcmalloc");
    const declined = await launch({
      PIXPORT_ALLOCATOR_DIRS: await withTcmalloc(),
      PIXPORT_ALLOCATOR: "system",
    });
    expect(declined.malloc).toBe("system");
    expect(readFileSync(`/proc/${declined.pid}/environ`, "utf8")).not.toContain("TCMALLOC_");
    // A thread-cache size of the host's own is kept.
    const sized = await launch({
      PIXPORT_ALLOCATOR_DIRS: await withTcmalloc(),
      TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES: "33554432",
    });
    expect(sized.malloc).toBe("tcmalloc");
    expect(readFileSync(`/proc/${sized.pid}/environ`, "utf8").split("\0")).toContain(
      "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES=33554432",
    );
  }, 90_000);

  it("starts lean with PIXPORT_MEMORY=lean: system malloc, glibc's fixed mmap threshold and two arenas, V8's small young generation", async () => {
    const lean = await launch({ PIXPORT_ALLOCATOR_DIRS: await withTcmalloc(), PIXPORT_MEMORY: "lean" });
    expect(lean.malloc).toBe("system");
    expect(mapsOf(lean.pid)).not.toContain("libtcmalloc");
    const environment = readFileSync(`/proc/${lean.pid}/environ`, "utf8").split("\0");
    expect(environment.find((entry) => entry.startsWith("GLIBC_TUNABLES="))).toContain(
      "glibc.malloc.mmap_threshold=131072",
    );
    expect(environment).toContain("MALLOC_ARENA_MAX=2");
    // A host's own arena count is kept, in either form.
    const own = await launch({ PIXPORT_MEMORY: "lean", MALLOC_ARENA_MAX: "4" });
    expect(readFileSync(`/proc/${own.pid}/environ`, "utf8").split("\0")).toContain("MALLOC_ARENA_MAX=4");
    const tuned = await launch({ PIXPORT_MEMORY: "lean", GLIBC_TUNABLES: "glibc.malloc.arena_max=3" });
    expect(
      readFileSync(`/proc/${tuned.pid}/environ`, "utf8")
        .split("\0")
        .filter((entry) => entry.startsWith("MALLOC_ARENA_MAX=")),
    ).toEqual([]);
    // V8's gc() is exposed, so the release of free memory collects the finished jobs' buffers.
    expect(environment.find((entry) => entry.startsWith("NODE_OPTIONS="))).toContain(
      "--max-semi-space-size=1 --expose-gc",
    );
    // A host's --no-expose-gc is kept.
    const declined = await launch({ PIXPORT_MEMORY: "lean", NODE_OPTIONS: "--no-expose-gc" });
    expect(readFileSync(`/proc/${declined.pid}/environ`, "utf8").split("\0")).toContain(
      "NODE_OPTIONS=--no-expose-gc --max-semi-space-size=1",
    );
    // It serves.
    await waitUntil(() => /live key:.*\n\s+\S+/.test(lean.node.output()), "the first-start keys");
    const key = /live key:.*\n\s+(\S+)/.exec(lean.node.output())?.[1] as string;
    const image = await upload(lean.node.url, key, await photo(640, 480));
    expect(image.width).toBe(640);
    // After a large job, the release collects first, and /metrics counts the collections' time.
    await upload(lean.node.url, key, await photo(1600, 1200));
    await expect
      .poll(async () => (await fetch(`${lean.node.url}/metrics`)).text(), { timeout: 5_000 })
      .toMatch(/^pixport_memory_release_gc_seconds_total 0\.\d*[1-9]/m);
    // A malloc named beside it is kept.
    const named = await launch({ PIXPORT_ALLOCATOR: TCMALLOC as string, PIXPORT_MEMORY: "lean" });
    expect(named.malloc).toBe("tcmalloc");
    const unknown = refused({ PIXPORT_MEMORY: "small" });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/PIXPORT_MEMORY must be default or lean/);
  }, 90_000);

  it("takes a malloc library by path, and refuses a missing or unknown choice with exit 2", async () => {
    const byPath = await launch({ PIXPORT_ALLOCATOR: TCMALLOC as string });
    expect(byPath.malloc).toBe("tcmalloc");
    const empty = await tempDir("pixport-allocator-empty-");
    const required = refused({ PIXPORT_ALLOCATOR: "tcmalloc", PIXPORT_ALLOCATOR_DIRS: empty });
    expect(required.status).toBe(2);
    expect(required.stderr).toMatch(/libtcmalloc_minimal\.so\.4 is not in .*libtcmalloc-minimal4/);
    const absent = refused({ PIXPORT_ALLOCATOR: path.join(empty, "nothing.so") });
    expect(absent.status).toBe(2);
    expect(absent.stderr).toMatch(/no such file/);
    const unknown = refused({ PIXPORT_ALLOCATOR: "fast" });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/must be auto, system, tcmalloc or the absolute path/);
  }, 90_000);
});
