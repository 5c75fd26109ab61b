import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes } from "@pixport/core";
import { ERROR_STATUS } from "@pixport/http";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const readJson = (file: string) => JSON.parse(readFileSync(path.join(root, file), "utf8"));

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

function imports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^\s*(?:import|export)[^"']*from\s+["']([^"']+)["']/gm)].map((match) => match[1]!);
}

const packageDirs = ["packages", "adapters"].flatMap((group) =>
  readdirSync(path.join(root, group)).map((name) => `${group}/${name}`),
);

describe("dependency boundaries", () => {
  it("core depends on zod only and imports no SDK, framework or Node built-in", () => {
    const pkg = readJson("packages/core/package.json");
    expect(Object.keys(pkg.dependencies ?? {})).toEqual(["zod"]);
    expect(pkg.peerDependencies).toBeUndefined();
    for (const file of sourceFiles("packages/core/src")) {
      for (const specifier of imports(file)) {
        expect(specifier === "zod" || specifier.startsWith("."), `${file} imports ${specifier}`).toBe(true);
      }
    }
  });

  it("http depends on core, zod and busboy only", () => {
    const pkg = readJson("packages/http/package.json");
    expect(Object.keys(pkg.dependencies ?? {}).sort()).toEqual(["@pixport/core", "busboy", "zod"]);
    for (const file of sourceFiles("packages/http/src")) {
      for (const specifier of imports(file)) {
        expect(
          ["zod", "busboy", "@pixport/core"].includes(specifier) ||
            specifier.startsWith(".") ||
            specifier.startsWith("node:"),
          `${file} imports ${specifier}`,
        ).toBe(true);
      }
    }
  });

  it("adapters take @pixport/core as a peer and repeat it as a dev dependency", () => {
    for (const dir of packageDirs.filter((name) => name.startsWith("adapters/"))) {
      const pkg = readJson(`${dir}/package.json`);
      expect(pkg.peerDependencies?.["@pixport/core"], dir).toBe("workspace:^");
      expect(pkg.devDependencies?.["@pixport/core"], dir).toBe("workspace:^");
      expect(pkg.dependencies?.["@pixport/core"], dir).toBeUndefined();
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
    for (const dir of packageDirs) {
      for (const file of sourceFiles(`${dir}/src`)) {
        for (const specifier of imports(file)) {
          if (specifier === "sharp") expect(sharpUsers, file).toContain(dir);
          if (specifier === "tsyringe") expect(dir, file).toBe("packages/container");
        }
      }
    }
  });

  it("every publishable package exports its source condition first, then types and default", () => {
    for (const dir of packageDirs) {
      const pkg = readJson(`${dir}/package.json`);
      if (pkg.private) continue;
      expect(Object.keys(pkg.exports["."]), dir).toEqual(["pixport-source", "types", "default"]);
      expect(pkg.files, dir).toEqual(["dist"]);
      expect(pkg.type, dir).toBe("module");
    }
  });
});

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
