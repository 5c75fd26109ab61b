import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const check = path.join(root, "scripts/check-system.mjs");

/** Where a program is on this machine's PATH (the suite's own check found every one). */
function which(program: string): string {
  const found = spawnSync("sh", ["-c", 'command -v "$1"', "which", program], { encoding: "utf8" });
  const where = found.stdout.trim();
  if (found.status !== 0 || where === "") throw new Error(`${program} is not on PATH`);
  return where;
}

const programs = ["redis-server", "openssl", "curl", "fc-list", "chromium", "tesseract", "unshare", "ip"];
const work = mkdtempSync(path.join(tmpdir(), "pixport-check-system-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * A directory to use as the whole PATH: node, sh, apt-get and every required program except
 * `without`, plus a fake `pnpm` that records being run (the test script's next step).
 */
function pathWithout(without: string): string {
  const dir = mkdtempSync(path.join(work, "bin-"));
  const present = ["node", "sh", ...programs.filter((program) => program !== without)];
  for (const program of present) symlinkSync(which(program), path.join(dir, program));
  // A Debian machine has apt-get; the message then names the apt-get command.
  writeFileSync(path.join(dir, "apt-get"), "#!/bin/sh\necho apt-get must not run >&2\nexit 99\n", {
    mode: 0o755,
  });
  writeFileSync(path.join(dir, "pnpm"), `#!/bin/sh\necho ran > "${dir}/pnpm-ran"\n`, { mode: 0o755 });
  return dir;
}

describe("scripts/check-system.mjs", () => {
  it("passes on this machine, which has everything the suite needs", () => {
    const run = spawnSync(process.execPath, [check], {
      encoding: "utf8",
      env: { ...process.env, PIXPORT_SYSTEM_CHECK: "report" },
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("stops the test command before any test when tesseract is missing, with the one install command", () => {
    const bin = pathWithout("tesseract");
    const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    // The root `test` script exactly as `pnpm test` runs it, with PATH lacking tesseract; a non-root
    // user is simulated (as root it would install with apt-get instead).
    const run = spawnSync(path.join(bin, "sh"), ["-c", manifest.scripts.test], {
      cwd: root,
      encoding: "utf8",
      env: { HOME: process.env.HOME ?? "/", PATH: bin, PIXPORT_SYSTEM_CHECK: "report" },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("the tests need tesseract, which this system lacks");
    expect(run.stderr).toContain("\n  sudo apt-get install -y tesseract-ocr\n");
    expect(run.stderr).not.toContain("apt-get must not run");
    // Nothing after the check ran: not lint, typecheck, build nor vitest (all go through pnpm).
    expect(existsSync(path.join(bin, "pnpm-ran"))).toBe(false);
  });

  it("names every missing package in one command", () => {
    const bin = pathWithout("redis-server");
    rmSync(path.join(bin, "chromium"));
    const run = spawnSync(path.join(bin, "node"), [check], {
      encoding: "utf8",
      env: { PATH: bin, PIXPORT_SYSTEM_CHECK: "report" },
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("the tests need redis-server, chromium, which this system lacks");
    expect(run.stderr).toContain("\n  sudo apt-get install -y redis-server chromium\n");
  });

  it("the fake PATH itself is complete: with nothing removed the check passes", () => {
    const bin = pathWithout("");
    const run = spawnSync(path.join(bin, "node"), [check], {
      encoding: "utf8",
      env: { PATH: bin, PIXPORT_SYSTEM_CHECK: "report" },
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });
});
