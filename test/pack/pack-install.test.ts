import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalRegistry, startLocalRegistry } from "./local-registry.js";

// Every publishable package, packed with `pnpm pack` as it would be published, then installed with
// npm into a fresh app outside the workspace (no workspace links), where the README's two quick
// starts are type-checked and run verbatim and the server's CLI runs from node_modules/.bin.
// npm installs from a registry on loopback (./local-registry.ts) that serves the packed tarballs and
// the third-party packages of the workspace's own install: no network, no install scripts.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const work = mkdtempSync(path.join(tmpdir(), "pixport-pack-"));
const tarballs = path.join(work, "tarballs");
const app = path.join(work, "app");

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  license?: string;
  files?: string[];
  exports?: Record<string, Record<string, string> | string>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  optionalDependencies?: Record<string, string>;
}

/** The workspace packages that are published: every non-private one under packages/ and adapters/. */
const publishable = ["packages", "adapters"].flatMap((group) =>
  readdirSync(path.join(root, group))
    .map((name) => path.join(root, group, name))
    .filter((dir) => existsSync(path.join(dir, "package.json")))
    .map((dir) => ({
      dir,
      manifest: JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as Manifest,
    }))
    .filter(({ manifest }) => manifest.private !== true),
);

/**
 * pnpm 12 itself, without the network: the one running this suite (`pnpm test` sets npm_execpath),
 * else the copy `npx --yes pnpm@12` left in npm's cache, else `pnpm` on PATH.
 */
function findPnpm(): string {
  const execPath = process.env.npm_execpath;
  if (execPath !== undefined && /pnpm/.test(path.basename(execPath))) return execPath;
  const npx = path.join(homedir(), ".npm/_npx");
  if (existsSync(npx)) {
    for (const id of readdirSync(npx)) {
      const dir = path.join(npx, id, "node_modules/pnpm");
      try {
        const { version } = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
        if (String(version).startsWith("12.") && existsSync(path.join(dir, "pnpm")))
          return path.join(dir, "pnpm");
      } catch {
        // Another package's cache entry.
      }
    }
  }
  return "pnpm";
}

/** A command in the app, with a clean environment: no npm or pnpm settings from the workspace's run. */
function appEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(npm|pnpm|npm_config)_/i.test(name) && !name.startsWith("VITEST") && name !== "NODE_OPTIONS")
      env[name] = value;
  }
  return { ...env, HOME: path.join(work, "home"), ...extra };
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? app,
    env: options.env ?? appEnv(),
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${result.status}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/**
 * npm, asynchronously: the registry answering it runs in this process, so a synchronous spawn
 * would block it.
 */
function npm(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", args, { cwd: app, env: appEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`npm ${args.join(" ")} exited ${code}\n${output}`)),
    );
  });
}

/** A fenced block of README.md by its info string, e.g. "ts quickstart=library". */
function readmeBlock(info: string): string {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)].filter(
    ([, fence]) => fence?.trim() === info,
  );
  if (blocks.length !== 1)
    throw new Error(`README.md has ${blocks.length} blocks fenced \`\`\`${info}, expected one`);
  return blocks[0]?.[2] ?? "";
}

function tarballFiles(file: string): string[] {
  return execFileSync("tar", ["-tzf", file], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => line.replace(/^package\//, ""));
}

function tarballManifest(file: string): Manifest {
  return JSON.parse(execFileSync("tar", ["-xzOf", file, "package/package.json"], { encoding: "utf8" }));
}

const tarballOf = (manifest: Manifest) =>
  path.join(tarballs, `${manifest.name.replace(/^@/, "").replace("/", "-")}-${manifest.version}.tgz`);

let registry: LocalRegistry;
const timings: Record<string, number> = {};
const started = Date.now();

beforeAll(async () => {
  for (const { dir, manifest } of publishable) {
    for (const file of [...Object.values(manifest.bin ?? {})]) {
      if (!existsSync(path.join(dir, file))) {
        throw new Error(
          `${manifest.name}: ${file} is missing; run the build (\`npx --yes pnpm@12 run build\`) first`,
        );
      }
    }
  }
  let at = Date.now();
  mkdirSync(tarballs);
  mkdirSync(app);
  mkdirSync(path.join(work, "home"));
  run(
    findPnpm(),
    [
      "--recursive",
      ...publishable.flatMap(({ manifest }) => ["--filter", manifest.name]),
      "pack",
      "--pack-destination",
      tarballs,
    ],
    { cwd: root, env: { ...process.env } },
  );
  timings.pack = Date.now() - at;

  registry = await startLocalRegistry({
    tarballs: readdirSync(tarballs).map((file) => path.join(tarballs, file)),
    storeDir: path.join(root, "node_modules/.pnpm"),
  });
  writeFileSync(
    path.join(app, "package.json"),
    `${JSON.stringify({ name: "pixport-pack-app", private: true, type: "module" }, null, 2)}\n`,
  );
  // npm with a fresh cache and no user config; install scripts never run (sharp's binary comes in
  // its @img/* packages, onnxruntime-node's script would only download optional GPU libraries).
  writeFileSync(
    path.join(app, ".npmrc"),
    [
      `registry=${registry.url}`,
      `cache=${path.join(work, "npm-cache")}`,
      "ignore-scripts=true",
      "audit=false",
      "fund=false",
      "update-notifier=false",
      "",
    ].join("\n"),
  );
  at = Date.now();
  await npm([
    "install",
    "@pixport/core",
    "@pixport/codec-sharp",
    "@pixport/storage-fs",
    "sharp",
    "@pixport/http",
    "@pixport/http-express",
    "express",
    "@pixport/server",
  ]);
  await npm(["install", "--save-dev", "typescript@~5.9", "@types/node@^20", "@types/express"]);
  timings.install = Date.now() - at;
}, 300_000);

afterAll(async () => {
  await registry?.close();
  rmSync(work, { recursive: true, force: true });
  process.stdout.write(
    `pack-and-install: ${JSON.stringify(timings)} ms, ${Date.now() - started} ms in all\n`,
  );
});

describe("packed packages", () => {
  it.each(publishable.map(({ manifest }) => [manifest.name, manifest] as const))(
    "%s: manifest and files as published",
    (_name, source) => {
      const file = tarballOf(source);
      expect(existsSync(file), file).toBe(true);
      const files = tarballFiles(file);
      const manifest = tarballManifest(file);
      expect(manifest.license).toBe("MIT");
      expect(files).toContain("LICENSE");
      expect(readFileSync(path.join(root, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
      // No workspace or catalog protocol survives packing; workspace packages get real ranges.
      for (const field of ["dependencies", "peerDependencies", "optionalDependencies"] as const) {
        for (const [name, range] of Object.entries(manifest[field] ?? {})) {
          expect(range, `${field}.${name}`).not.toMatch(/^(workspace|catalog|file|link):/);
          if (name.startsWith("@pixport/")) expect(range, `${field}.${name}`).toMatch(/^\^\d+\.\d+\.\d+$/);
        }
      }
      // The private test kit is never a dependency of a published package.
      expect(Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })).not.toContain(
        "@pixport/testing",
      );
      // Every export's types and code, and every bin, is in the tarball (the source condition is
      // the workspace's own, resolved only inside it).
      for (const [entry, target] of Object.entries(manifest.exports ?? {})) {
        const conditions = typeof target === "string" ? { default: target } : target;
        expect(Object.keys(conditions), entry).toEqual(expect.arrayContaining(["types", "default"]));
        for (const [condition, where] of Object.entries(conditions)) {
          if (condition === "pixport-source") continue;
          expect(files, `${manifest.name} exports["${entry}"].${condition}`).toContain(
            where.replace(/^\.\//, ""),
          );
        }
      }
      for (const [bin, where] of Object.entries(manifest.bin ?? {})) {
        expect(files, `bin ${bin}`).toContain(where.replace(/^\.\//, ""));
      }
      // Only the build and the manifest ship: no sources, tests or configs.
      expect(files.filter((name) => /^(src|test)\/|tsconfig|tsup\.config|vitest\.config/.test(name))).toEqual(
        [],
      );
    },
  );

  it("adapters take @pixport/core as a peer, never a second copy", () => {
    for (const { dir, manifest } of publishable) {
      if (!dir.includes(`${path.sep}adapters${path.sep}`)) continue;
      const packed = tarballManifest(tarballOf(manifest));
      expect(packed.peerDependencies?.["@pixport/core"], manifest.name).toMatch(/^\^/);
      expect(packed.dependencies?.["@pixport/core"], manifest.name).toBeUndefined();
    }
  });
});

describe("installed with npm into an app outside the workspace", () => {
  it("installs real copies from the tarballs, with nothing fetched from elsewhere", () => {
    expect(realpathSync(app).startsWith(`${realpathSync(root)}${path.sep}`)).toBe(false);
    for (const name of ["@pixport/core", "@pixport/codec-sharp", "@pixport/storage-fs", "@pixport/server"]) {
      const dir = path.join(app, "node_modules", name);
      expect(lstatSync(dir).isSymbolicLink(), `${name} is a link`).toBe(false);
      expect(existsSync(path.join(dir, "LICENSE")), name).toBe(true);
    }
    // Every package came from the loopback registry: the @pixport ones from this run's tarballs.
    const lock = JSON.parse(readFileSync(path.join(app, "package-lock.json"), "utf8")) as {
      packages: Record<
        string,
        {
          resolved?: string;
          link?: boolean;
          optionalDependencies?: Record<string, string>;
          peerDependenciesMeta?: Record<string, { optional?: boolean }>;
        }
      >;
    };
    const installed = Object.entries(lock.packages).filter(([where]) => where !== "");
    expect(installed.length).toBeGreaterThan(100);
    for (const [where, entry] of installed) {
      expect(entry.link, where).toBeUndefined();
      expect(entry.resolved, where).toMatch(new RegExp(`^${registry.url}-/tarball/`));
    }
    const pixport = installed.filter(([where]) => where.includes("node_modules/@pixport/"));
    expect(pixport.map(([where]) => where)).toEqual(
      expect.arrayContaining(["node_modules/@pixport/core", "node_modules/@pixport/server"]),
    );
    for (const [where, entry] of pixport) expect(entry.resolved, where).toContain("/-/tarball/@pixport/");
    // What the registry lacked (sharp's builds for other systems, optional peers) is optional
    // wherever it is named; a required one would have failed the install.
    const optional = new Set(
      installed.flatMap(([, entry]) => [
        ...Object.keys(entry.optionalDependencies ?? {}),
        ...Object.entries(entry.peerDependenciesMeta ?? {})
          .filter(([, meta]) => meta.optional === true)
          .map(([name]) => name),
      ]),
    );
    expect([...registry.misses].filter((name) => !optional.has(name))).toEqual([]);
  });

  it("type-checks the README's two quick starts with strict settings", () => {
    writeFileSync(path.join(app, "library.ts"), readmeBlock("ts quickstart=library"));
    writeFileSync(path.join(app, "express.ts"), readmeBlock("ts quickstart=express"));
    writeFileSync(
      path.join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          // Type-checks the packages' declaration files too.
          skipLibCheck: false,
          outDir: "out",
          types: ["node"],
        },
        files: ["library.ts", "express.ts"],
      }),
    );
    const at = Date.now();
    run(path.join(app, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"]);
    timings.tsc = Date.now() - at;
    expect(existsSync(path.join(app, "out/library.js"))).toBe(true);
  }, 120_000);

  it("runs the library quick start", () => {
    const result = run(process.execPath, ["out/library.js"]);
    // The same output test/repo/docs.test.ts checks for the block run from the workspace's sources.
    expect(result.stdout).toMatch(
      /^image_[a-z0-9]{24}: 400x300 webp, \d+ bytes at https:\/\/cdn\.example\.com\/images\/image_[a-z0-9]{24}\.webp\n$/,
    );
    expect(existsSync(path.join(app, "thumb.webp"))).toBe(true);
    // It stored the upload and the transform's output under ./data.
    expect(readdirSync(path.join(app, "data/images")).length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it("runs the Express quick start", () => {
    const result = run(process.execPath, ["out/express.js"]);
    expect(result.stdout).toMatch(/^201 \{/);
    expect(result.stdout).toContain("name: 'square'");
    expect(result.stdout).toContain("format: 'png'");
  }, 60_000);

  it("runs the CLI from node_modules/.bin: `pixport keys create` and `pixport serve`", async () => {
    const bin = path.join(app, "node_modules/.bin");
    const dataDir = path.join(work, "server-data");
    const created = run(
      path.join(bin, "pixport"),
      ["keys", "create", "--kind", "live", "--account", "acme"],
      {
        env: appEnv({ PIXPORT_DATA_DIR: dataDir }),
      },
    );
    const key = created.stdout.trim();
    expect(key).toMatch(/^live_[A-Za-z0-9]{32}$/);

    const server: ChildProcess = spawn(
      path.join(bin, "pixport"),
      ["serve", "--port", "0", "--host", "127.0.0.1"],
      {
        cwd: app,
        env: appEnv({ PIXPORT_DATA_DIR: dataDir }),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      let output = "";
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`pixport serve did not start:\n${output}`)), 60_000);
        const read = (chunk: Buffer) => {
          output += chunk.toString();
          const listening = /pixport listening on (http:\/\/\S+)/.exec(output);
          if (listening?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(listening[1]);
          }
        };
        server.stdout?.on("data", read);
        server.stderr?.on("data", read);
        server.once("exit", (code) => reject(new Error(`pixport serve exited ${code}:\n${output}`)));
      });
      // The key made before the server started is accepted; no key is refused.
      const listed = await fetch(`${url}/v1/images`, { headers: { "x-api-key": key } });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toMatchObject({ data: [] });
      const refused = await fetch(`${url}/v1/images`);
      expect(refused.status).toBe(401);
    } finally {
      const exited = new Promise((resolve) => server.once("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
  }, 90_000);
});
