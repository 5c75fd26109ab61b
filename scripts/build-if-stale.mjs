#!/usr/bin/env node
// Builds only the workspace packages whose build is missing or older than their sources, so
// `pnpm start` reuses an up-to-date build (seconds) instead of rebuilding all packages (about a
// minute). A package is stale when a file under src/ (or its package.json / tsup.config.ts) is newer
// than the oldest file of its dist/ entry points. Stale packages are built with pnpm, which orders
// them by their dependencies. Prints one line either way.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function newest(dir) {
  let time = 0;
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) time = Math.max(time, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return time;
}

const stale = [];
for (const group of ["packages", "adapters"]) {
  for (const name of readdirSync(path.join(root, group))) {
    const dir = path.join(root, group, name);
    const manifestPath = path.join(dir, "package.json");
    if (!existsSync(manifestPath)) continue;
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
    if (manifest.scripts?.build === undefined) continue;
    const dist = path.join(dir, "dist");
    const entry = path.join(dist, "index.js");
    const sources = Math.max(
      newest(path.join(dir, "src")),
      statSync(manifestPath).mtimeMs,
      existsSync(path.join(dir, "tsup.config.ts")) ? statSync(path.join(dir, "tsup.config.ts")).mtimeMs : 0,
    );
    if (!existsSync(entry) || statSync(entry).mtimeMs < sources) stale.push(manifest.name);
  }
}

if (stale.length === 0) {
  console.log("build: up to date");
  process.exit(0);
}
console.log(`build: ${stale.length} package(s) out of date (${stale.join(", ")}); building them`);
const result = spawnSync(
  "pnpm",
  ["-r", "--reporter=silent", ...stale.flatMap((name) => ["--filter", name]), "run", "build"],
  { cwd: root, stdio: ["ignore", "ignore", "inherit"], shell: process.platform === "win32" },
);
if (result.status !== 0) {
  console.error("build failed; run `npx --yes pnpm@12 run build` to see why");
  process.exit(result.status ?? 1);
}
console.log("build: done");
