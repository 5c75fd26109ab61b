import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/*
 * The names each entry of @pixport/core exports, against a committed, reviewed list
 * (core-exports.snapshot.json): any addition or removal fails until the list is updated on purpose
 * (`PIXPORT_UPDATE_EXPORTS=1 npx vitest run test/repo/core-exports.test.ts` rewrites it; review the
 * diff). `@pixport/core` and `@pixport/core/adapter-kit` are covered by semver; `internal` is not.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const core = path.join(root, "packages/core");
const SNAPSHOT = path.join(root, "test/repo/core-exports.snapshot.json");
const MAIN_ENTRY_BUDGET = 120;

interface EntryNames {
  values: string[];
  types: string[];
}

const pkg = JSON.parse(readFileSync(path.join(core, "package.json"), "utf8"));
const subpaths = Object.keys(pkg.exports) as string[];
const entryName = (subpath: string) =>
  subpath === "." ? "@pixport/core" : `@pixport/core/${subpath.slice(2)}`;

/** Every exported name of each entry's source, split into runtime values and type-only names. */
function exportedNames(): Record<string, EntryNames> {
  const files = subpaths.map((subpath) => path.join(core, pkg.exports[subpath]["pixport-source"]));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const result: Record<string, EntryNames> = {};
  subpaths.forEach((subpath, index) => {
    const source = program.getSourceFile(files[index]!)!;
    const symbols = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
    const values: string[] = [];
    const types: string[] = [];
    for (const symbol of symbols) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const typeOnly = symbol.declarations?.some((declaration) =>
        ts.isTypeOnlyExportDeclaration(declaration),
      );
      (target.flags & ts.SymbolFlags.Value && !typeOnly ? values : types).push(symbol.name);
    }
    result[entryName(subpath)] = { values: values.sort(), types: types.sort() };
  });
  return result;
}

describe("the entries of @pixport/core", () => {
  const names = exportedNames();

  it("export exactly the reviewed names (core-exports.snapshot.json)", () => {
    if (process.env.PIXPORT_UPDATE_EXPORTS === "1")
      writeFileSync(SNAPSHOT, `${JSON.stringify(names, null, 2)}\n`);
    expect(names).toEqual(JSON.parse(readFileSync(SNAPSHOT, "utf8")));
  });

  it(`keep the main entry at ${MAIN_ENTRY_BUDGET} names or fewer, and every name in one entry only`, () => {
    const main = names["@pixport/core"]!;
    const count = main.values.length + main.types.length;
    console.log(
      Object.entries(names)
        .map(([entry, { values, types }]) => `${entry}: ${values.length + types.length} names`)
        .join(", "),
    );
    expect(count).toBeLessThanOrEqual(MAIN_ENTRY_BUDGET);
    const all = Object.values(names).flatMap(({ values, types }) => [...values, ...types]);
    expect(all.filter((name, index) => all.indexOf(name) !== index)).toEqual([]);
  });

  it("declare the source, types and built file of every entry, and the build exports the same values", async () => {
    expect(subpaths).toEqual([".", "./adapter-kit", "./internal"]);
    const tsup = readFileSync(path.join(core, "tsup.config.ts"), "utf8");
    for (const subpath of subpaths) {
      const conditions = pkg.exports[subpath];
      expect(Object.keys(conditions), subpath).toEqual(["pixport-source", "types", "default"]);
      const source = (conditions["pixport-source"] as string).replace(/^\.\//, "");
      expect(tsup, subpath).toContain(`"${source}"`);
      expect(conditions.default, subpath).toBe(source.replace(/^src\//, "./dist/").replace(/\.ts$/, ".js"));
      expect(conditions.types, subpath).toBe(source.replace(/^src\//, "./dist/").replace(/\.ts$/, ".d.ts"));
      const built = path.join(core, conditions.default);
      // `pnpm build` runs before the tests in `pnpm test`; a missing build is a failure, not a skip.
      expect(existsSync(built), `${built} (run pnpm build)`).toBe(true);
      const runtime = Object.keys(await import(built)).sort();
      expect(runtime, subpath).toEqual(names[entryName(subpath)]!.values);
    }
  });
});

describe("who imports which entry", () => {
  const files = ts.sys
    .readDirectory(
      root,
      [".ts", ".mts", ".mjs"],
      ["**/node_modules", "**/dist"],
      ["packages/*/src/**/*", "adapters/*/src/**/*", "examples/*/src/**/*"],
    )
    .filter((file) => !file.includes("/packages/core/"));
  const importsOf = (file: string) =>
    [...readFileSync(file, "utf8").matchAll(/from\s+["'](@pixport\/core[^"']*)["']/g)].map(
      (match) => match[1],
    );

  it("adapters and examples use only @pixport/core and @pixport/core/adapter-kit", () => {
    const offenders = files
      .filter((file) => !file.includes("/packages/"))
      .flatMap((file) =>
        importsOf(file)
          .filter((specifier) => specifier !== "@pixport/core" && specifier !== "@pixport/core/adapter-kit")
          .map((specifier) => `${path.relative(root, file)}: ${specifier}`),
      );
    expect(offenders).toEqual([]);
  });

  it("the internal entry serves pixport's own server, http, container and testing packages only", () => {
    const users = new Set(
      files
        .filter((file) => importsOf(file).includes("@pixport/core/internal"))
        .map((file) => path.relative(root, file).split("/").slice(0, 2).join("/")),
    );
    for (const user of users) {
      expect(["packages/server", "packages/http", "packages/container", "packages/testing"], user).toContain(
        user,
      );
    }
  });
});
