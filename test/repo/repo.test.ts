import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes } from "@pixport/core";
import { ERROR_STATUS } from "@pixport/http";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const readJson = (file: string) => JSON.parse(readFileSync(path.join(root, file), "utf8"));

const packageDirs = ["packages", "adapters"].flatMap((group) =>
  readdirSync(path.join(root, group)).map((name) => `${group}/${name}`),
);

describe("package manifests", () => {
  it("every publishable package exports its source condition first, then types and default", () => {
    for (const dir of packageDirs) {
      const pkg = readJson(`${dir}/package.json`);
      if (pkg.private) continue;
      expect(Object.keys(pkg.exports["."]), dir).toEqual(["pixport-source", "types", "default"]);
      // Built output only; the server also ships its launcher scripts (POSIX sh, nothing to build),
      // and each of them must be one of its bins or used by one.
      expect(pkg.files, dir).toEqual(dir === "packages/server" ? ["bin", "dist"] : ["dist"]);
      if (dir === "packages/server") {
        expect(pkg.bin["pixport-serve"], dir).toBe("./bin/pixport-serve");
        const launcher = readFileSync(path.join(root, dir, "bin/pixport-serve"), "utf8");
        for (const script of readdirSync(path.join(root, dir, "bin"))) {
          expect([...Object.values(pkg.bin), launcher].join("\n"), script).toContain(script);
        }
      }
      expect(pkg.type, dir).toBe("module");
    }
  });
});

// The entries of @pixport/core and who may import which: test/repo/core-exports.test.ts.

describe("error catalog", () => {
  it("maps every code to a status and documents it in docs/errors.md, both ways", () => {
    const docs = readFileSync(path.join(root, "docs/errors.md"), "utf8");
    const documented = [...docs.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((match) => [
      match[1],
      Number(match[2]),
    ]);
    const codes = Object.values(ErrorCodes);
    expect(documented.map(([code]) => code).sort()).toEqual([...codes].sort());
    for (const [code, status] of documented) {
      expect(ERROR_STATUS[code as keyof typeof ERROR_STATUS].status, String(code)).toBe(status);
    }
  });
});

describe("docs/contract.md", () => {
  const contract = readFileSync(path.join(root, "docs/contract.md"), "utf8");
  const sections = new Set(
    [...contract.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((match) => match[1]!.replace(/\.$/, "")),
  );
  const decisions = new Set([...contract.matchAll(/^\| (P\d+) \|/gm)].map((match) => match[1]!));

  function textFiles(dir: string): string[] {
    return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.(ts|mjs|md)$/.test(entry.name))
      .map((entry) => path.join(entry.parentPath, entry.name))
      .filter(
        (file) =>
          !file.includes(`${path.sep}node_modules${path.sep}`) &&
          !file.includes(`${path.sep}dist${path.sep}`),
      );
  }

  it("has every section 1 to 9 and every decision P1 to P25", () => {
    for (const section of ["1", "1.1", "1.6", "2.4", "3", "4", "5.1", "5.21", "6", "7", "8", "9"]) {
      expect(sections, section).toContain(section);
    }
    expect([...decisions].sort()).toEqual(Array.from({ length: 25 }, (_, index) => `P${index + 1}`).sort());
  });

  it("resolves every contract reference in the code and the docs", () => {
    const files = [
      ...["packages", "adapters", "test", "examples", "docs"].flatMap(textFiles),
      path.join(root, "README.md"),
    ].filter((file) => !file.endsWith(`${path.sep}contract.md`));
    const unresolved: string[] = [];
    let checked = 0;
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/\bP(\d+)\b/g)) {
        checked += 1;
        if (!decisions.has(`P${match[1]}`)) unresolved.push(`${path.relative(root, file)}: P${match[1]}`);
      }
      for (const match of text.matchAll(/(?:contract(?: section)?|§)\s*(\d+(?:\.\d+)?)\b/g)) {
        checked += 1;
        if (!sections.has(match[1]!)) unresolved.push(`${path.relative(root, file)}: section ${match[1]}`);
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(unresolved).toEqual([]);
  });

  it("is what the code cites: no reference to files outside the repository", () => {
    const files = [
      ...["packages", "adapters", "test", "examples", "docs", "bench", "scripts"].flatMap(textFiles),
      path.join(root, "README.md"),
      path.join(root, "BENCHMARKS.md"),
    ];
    // Written so that this file does not match its own pattern.
    const outside = files.filter((file) =>
      /shared\/api-contract|api-contract\.md|shared\/attack-catalogue|attack[ ]catalogue/i.test(
        readFileSync(file, "utf8"),
      ),
    );
    expect(outside.map((file) => path.relative(root, file))).toEqual([]);
  });
});

describe("library documentation", () => {
  it("gives every public factory of every published package an @example", () => {
    const missing: string[] = [];
    for (const group of ["packages", "adapters"]) {
      for (const name of readdirSync(path.join(root, group))) {
        const src = path.join(root, group, name, "src");
        const pkg = JSON.parse(readFileSync(path.join(root, group, name, "package.json"), "utf8")) as {
          private?: boolean;
        };
        let index: string;
        try {
          index = readFileSync(path.join(src, "index.ts"), "utf8");
        } catch {
          continue;
        }
        if (pkg.private === true) continue;
        // What the entry exports (its `export { ... }` lists and its own exported declarations),
        // not what it merely imports to build them.
        const exported = [
          ...[...index.matchAll(/^export (?:type )?\{([^}]*)\}/gm)].map((match) => match[1]),
          ...[...index.matchAll(/^export (?:async )?(?:function|const) (\w+)/gm)].map((match) => match[1]),
        ].join(" ");
        const factories = new Set(exported.match(/\b(create[A-Z]\w*(?<!Schema)|fastifyPixport)\b/g) ?? []);
        const files = readdirSync(src, { recursive: true, encoding: "utf8" })
          .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
          .map((file) => readFileSync(path.join(src, file), "utf8"));
        for (const factory of factories) {
          const text = files.find((file) =>
            new RegExp(`^export (async )?(function|const) ${factory}\\b`, "m").test(file),
          );
          if (text === undefined) continue; // re-exported from another package
          const at = text.search(new RegExp(`^export (async )?(function|const) ${factory}\\b`, "m"));
          const before = text.slice(0, at).trimEnd();
          const doc = before.endsWith("*/") ? before.slice(before.lastIndexOf("/**")) : "";
          if (!doc.includes("@example")) missing.push(`${group}/${name}: ${factory}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe(".ci/run", () => {
  it("runs README's test command, verbatim, as the command it ends with", () => {
    const readme = readFileSync(path.join(root, "README.md"), "utf8");
    const block = /## The two commands[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    const lines = block.split("\n");
    const testCommand = lines[lines.findIndex((line) => line.startsWith("# Run the whole test suite")) + 1];
    expect(testCommand).toMatch(/ test$/);
    const script = readFileSync(path.join(root, ".ci/run"), "utf8");
    const scriptLines = script.trimEnd().split("\n");
    // The script's last line, reached on every path (nothing before it execs or exits).
    expect(scriptLines.at(-1)).toBe(testCommand);
    expect(scriptLines.filter((line) => /^\s*(exec|exit)\b/.test(line))).toEqual([]);
    // The suite itself runs inside the loopback-only namespace: `pnpm test` goes through it.
    const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    expect(manifest.scripts.test).toMatch(/&& sh scripts\/loopback-only vitest run$/);
  });
});
