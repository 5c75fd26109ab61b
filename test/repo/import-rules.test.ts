import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The import rules of docs/architecture.md, read from every workspace package's manifest
 * (`dependencies` and `peerDependencies`: what its users install) and from its source imports
 * (`src/`, tests aside: what its code loads at run time). Development dependencies and tests may
 * use anything (adapter tests run against real codecs, the HTTP tests against the testing kit).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Adapter → adapter dependencies being removed; delete each entry when its dependency is gone.
 * Nothing may be added here (the OCR adapter takes the `MemoryReleaser` port, the removers share
 * their cutout rules through core: none is left).
 */
const KNOWN_ADAPTER_EXCEPTIONS: readonly string[] = [];

type Layer =
  | "core"
  | "url-signer"
  | "http"
  | "adapter"
  | "binding"
  | "container"
  | "server"
  | "testing"
  | "client"
  | "playground"
  | "example";

interface Workspace {
  dir: string;
  name: string;
  layer: Layer;
  manifest: Record<string, Record<string, string> | undefined> & { private?: boolean };
}

function layerOf(dir: string): Layer {
  const [group, name = ""] = dir.split("/");
  if (group === "examples") return "example";
  if (group === "adapters") return name.startsWith("http-") ? "binding" : "adapter";
  const layers: Record<string, Layer> = {
    core: "core",
    "url-signer": "url-signer",
    http: "http",
    container: "container",
    server: "server",
    testing: "testing",
    client: "client",
    playground: "playground",
  };
  const layer = layers[name];
  if (layer === undefined) throw new Error(`${dir}: no layer; add it to docs/architecture.md and here`);
  return layer;
}

const workspaces: Workspace[] = ["packages", "adapters", "examples"].flatMap((group) =>
  readdirSync(path.join(root, group), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== "assets")
    .map((entry) => {
      const dir = `${group}/${entry.name}`;
      const manifest = JSON.parse(readFileSync(path.join(root, dir, "package.json"), "utf8"));
      return { dir, name: manifest.name as string, layer: layerOf(dir), manifest };
    }),
);
const byName = new Map(workspaces.map((workspace) => [workspace.name, workspace]));

/** Source files a package loads at run time: `src/**`, tests aside. */
function sourceFiles(dir: string): string[] {
  const src = path.join(root, dir, "src");
  let entries: string[];
  try {
    entries = readdirSync(src, { recursive: true, encoding: "utf8" });
  } catch {
    return [];
  }
  return entries
    .filter((file) => /\.(ts|mts|cts|js|mjs|cjs)$/.test(file) && !/\.test\.[cm]?[jt]s$/.test(file))
    .filter((file) => !file.split(path.sep).includes("test"))
    .map((file) => path.join(src, file));
}

/** Every module specifier of `text`: static, side-effect, dynamic and `typeof import()` imports, re-exports, `require`. */
function specifiersOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const patterns = [
    /\b(?:import|export)\s[^;]*?\bfrom\s*["']([^"'\s]+)["']/g,
    /\bimport\s*["']([^"'\s]+)["']/g,
    /\bimport\s*\(\s*["']([^"'\s]+)["']\s*\)/g,
    /\brequire(?:\.resolve)?\s*\(\s*["']([^"'\s]+)["']\s*\)/g,
    /\bcreateRequire\([^)]*\)\s*\(\s*["']([^"'\s]+)["']\s*\)/g,
  ];
  return [...new Set(patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => match[1]!)))];
}

/** The package a bare specifier names (`@scope/name` or `name`), or undefined for relative and `node:` ones. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("node:") || specifier.startsWith("/"))
    return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** Each production reference of a workspace: a package it declares or imports, with where. */
function references(workspace: Workspace): { target: string; specifier: string; where: string }[] {
  const found: { target: string; specifier: string; where: string }[] = [];
  for (const field of ["dependencies", "peerDependencies"]) {
    for (const name of Object.keys(workspace.manifest[field] ?? {})) {
      found.push({ target: name, specifier: name, where: `${workspace.dir}/package.json ${field}` });
    }
  }
  for (const file of sourceFiles(workspace.dir)) {
    for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
      if (specifier.startsWith("node:")) {
        found.push({ target: "node:", specifier, where: path.relative(root, file) });
        continue;
      }
      const target = packageOf(specifier);
      if (target !== undefined) found.push({ target, specifier, where: path.relative(root, file) });
    }
  }
  return found;
}

/** The workspace packages of each layer that a package of `layer` may reference. */
const MAY_USE: Record<Layer, readonly Layer[]> = {
  core: [],
  "url-signer": [],
  http: ["core"],
  adapter: ["core"],
  binding: ["core", "http"],
  container: ["core", "http", "adapter"],
  server: ["core", "http", "adapter", "binding", "container", "url-signer", "playground"],
  testing: ["core", "url-signer"],
  client: [],
  playground: [],
  example: ["core", "http", "adapter", "binding", "container", "url-signer"],
};

/** Third-party packages (and `node:`) a layer may reference; `undefined`: any. */
const THIRD_PARTY: Partial<Record<Layer, readonly string[]>> = {
  core: ["zod"],
  "url-signer": ["node:"],
  http: ["zod", "busboy", "node:"],
};

/** The rule `workspace` → `target` breaks, or undefined. */
function violation(workspace: Workspace, target: string, specifier: string): string | undefined {
  if (target === workspace.name) return undefined;
  const used = byName.get(target);
  if (used === undefined) {
    const allowed = THIRD_PARTY[workspace.layer];
    return allowed === undefined || allowed.includes(target)
      ? undefined
      : `${workspace.layer} may use only ${allowed.join(", ")}`;
  }
  if (!MAY_USE[workspace.layer].includes(used.layer)) {
    if (KNOWN_ADAPTER_EXCEPTIONS.includes(`${workspace.name} -> ${target}`)) return undefined;
    return `a ${workspace.layer} package may not use a ${used.layer} package`;
  }
  if (workspace.layer === "example" && /\/internal(\/|$)/.test(specifier)) {
    return "examples use public package entries only, never an internal one";
  }
  return undefined;
}

describe("import rules (docs/architecture.md)", () => {
  it("knows the layer of every workspace package", () => {
    expect(workspaces.map((workspace) => `${workspace.dir}: ${workspace.layer}`).length).toBeGreaterThan(20);
    for (const workspace of workspaces) expect(workspace.name, workspace.dir).toMatch(/^@pixport\//);
  });

  it("every package declares and imports only what its layer may use", () => {
    const broken: string[] = [];
    for (const workspace of workspaces) {
      for (const { target, specifier, where } of references(workspace)) {
        const why = violation(workspace, target, specifier);
        if (why !== undefined) broken.push(`${where}: ${specifier} (${why})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("no adapter uses another adapter, except the listed ones being removed, which still exist", () => {
    const adapterEdges = new Set<string>();
    for (const workspace of workspaces.filter((w) => w.layer === "adapter" || w.layer === "binding")) {
      for (const { target } of references(workspace)) {
        const used = byName.get(target);
        if (
          used !== undefined &&
          used !== workspace &&
          (used.layer === "adapter" || used.layer === "binding")
        ) {
          adapterEdges.add(`${workspace.name} -> ${target}`);
        }
      }
    }
    // A listed exception whose dependency is gone must leave the list, so it cannot come back.
    expect([...adapterEdges].sort()).toEqual([...KNOWN_ADAPTER_EXCEPTIONS].sort());
  });

  it("nothing published depends on the private testing kit", () => {
    for (const workspace of workspaces.filter((w) => w.layer !== "testing")) {
      for (const { target, where } of references(workspace)) {
        expect(target === "@pixport/testing" ? where : undefined, workspace.dir).toBeUndefined();
      }
    }
  });

  it("every workspace package a source file imports is declared as a dependency or peer", () => {
    const undeclared: string[] = [];
    for (const workspace of workspaces) {
      const declared = new Set([
        ...Object.keys(workspace.manifest.dependencies ?? {}),
        ...Object.keys(workspace.manifest.peerDependencies ?? {}),
        workspace.name,
      ]);
      for (const { target, where } of references(workspace)) {
        if (byName.has(target) && !declared.has(target)) undeclared.push(`${where}: ${target}`);
      }
    }
    expect(undeclared).toEqual([]);
  });

  it("finds every kind of import in a source file", () => {
    const text = [
      'import { a } from "one";',
      "import {\n  b,\n  type C,\n} from '@scope/two/sub';",
      'import "three";',
      'export * from "./four.js";',
      'const five = await import("five");',
      'type Six = typeof import("six");',
      'const seven = require("seven");',
      'const eight = createRequire(import.meta.url)("eight");',
      '// import { commented } from "not-this";',
      '/** @example import { also } from "nor-this"; */',
      'const url = "https://example.com/x"; import { nine } from "nine";',
    ].join("\n");
    expect(specifiersOf(text).sort()).toEqual(
      ["one", "@scope/two/sub", "three", "./four.js", "five", "six", "seven", "eight", "nine"].sort(),
    );
  });
});

describe("dependency boundaries", () => {
  it("core depends on zod only and imports no SDK, framework or Node built-in", () => {
    const pkg = byName.get("@pixport/core")!.manifest;
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(["zod"]);
    expect(pkg.peerDependencies).toBeUndefined();
    for (const file of sourceFiles("packages/core")) {
      for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
        expect(specifier === "zod" || specifier.startsWith("."), `${file} imports ${specifier}`).toBe(true);
      }
    }
  });

  it("http depends on core, zod and busboy only", () => {
    const pkg = byName.get("@pixport/http")!.manifest;
    expect(Object.keys(pkg.dependencies ?? {}).sort()).toEqual(["@pixport/core", "busboy", "zod"]);
    for (const file of sourceFiles("packages/http")) {
      for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
        expect(
          ["zod", "busboy", "@pixport/core", "@pixport/core/adapter-kit", "@pixport/core/internal"].includes(
            specifier,
          ) ||
            specifier.startsWith(".") ||
            specifier.startsWith("node:"),
          `${file} imports ${specifier}`,
        ).toBe(true);
      }
    }
  });

  it("adapters take @pixport/core as a peer and repeat it as a dev dependency", () => {
    for (const { dir, manifest } of workspaces.filter((w) => w.dir.startsWith("adapters/"))) {
      expect(manifest.peerDependencies?.["@pixport/core"], dir).toBe("workspace:^");
      expect(manifest.devDependencies?.["@pixport/core"], dir).toBe("workspace:^");
      expect(manifest.dependencies?.["@pixport/core"], dir).toBeUndefined();
    }
  });

  it("only sharp-based adapters (and the private testing fixtures) load sharp; only packages/container imports tsyringe", () => {
    // background-sharp decodes and segments pixels itself (the embedded BackgroundRemover);
    // ocr-tesseract pre-processes images for OCR (grayscale, upscale); background-onnx resizes the
    // model's input and joins its mask as alpha. All take sharp as a peer.
    const sharpUsers = [
      "adapters/codec-sharp",
      "adapters/background-sharp",
      "adapters/background-onnx",
      "adapters/ocr-tesseract",
      "packages/testing",
    ];
    for (const { dir } of workspaces.filter((w) => w.layer !== "example")) {
      for (const file of sourceFiles(dir)) {
        for (const specifier of specifiersOf(readFileSync(file, "utf8"))) {
          if (specifier === "sharp") expect(sharpUsers, file).toContain(dir);
          if (specifier === "tsyringe") expect(dir, file).toBe("packages/container");
        }
      }
    }
  });
});

describe("architecture notes", () => {
  it("AGENTS.md's layout and docs/architecture.md name every workspace package", () => {
    const agents = readFileSync(path.join(root, "AGENTS.md"), "utf8");
    const architecture = readFileSync(path.join(root, "docs/architecture.md"), "utf8");
    const missing: string[] = [];
    for (const { dir } of workspaces) {
      const short = dir.split("/")[1]!;
      if (!agents.includes(`\`${dir}\``) && !agents.includes(`\`${short}\``))
        missing.push(`AGENTS.md: ${dir}`);
      if (dir.startsWith("examples/")) continue;
      if (!architecture.includes(short)) missing.push(`docs/architecture.md: ${dir}`);
    }
    expect(missing).toEqual([]);
  });
});
