import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * README.md, BENCHMARKS.md and docs/*.md stay true to the repository: every relative link and
 * anchor resolves (in the packages' READMEs and AGENTS.md too), and every code block marked
 * runnable type-checks against the workspace's sources (` ```ts check `, and the README's
 * ` ```ts quickstart=... ` blocks, which also run).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const run = promisify(execFile);

const pages = [
  "README.md",
  "BENCHMARKS.md",
  ...readdirSync(path.join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];
/** Every other page whose links are checked too: AGENTS.md and the packages' and examples' READMEs. */
const otherPages = [
  "AGENTS.md",
  ...["packages", "adapters", "examples"].flatMap((group) =>
    readdirSync(path.join(root, group))
      .map((name) => `${group}/${name}/README.md`)
      .filter((file) => existsSync(path.join(root, file))),
  ),
];

/** Lines outside fenced code blocks, with inline code blanked (links inside it are not links). */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced ? "" : line.replace(/`[^`]*`/g, "``");
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, `-1` for repeats. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const text = heading[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links keep their text
      .replace(/<[^>]+>/g, "")
      .replace(/[*_`~]/g, (char) => (char === "_" ? "_" : ""));
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every `[text](target)` link of a page's prose, with its line. */
function links(markdown: string): { line: number; target: string }[] {
  const found: { line: number; target: string }[] = [];
  proseLines(markdown).forEach((text, index) => {
    for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      found.push({ line: index + 1, target: match[1]! });
    }
  });
  return found;
}

describe("links and anchors in README.md, BENCHMARKS.md, docs/ and the packages' READMEs", () => {
  it("computes GitHub's anchors", () => {
    const anchors = headingAnchors(
      [
        "# Offline image intelligence: remove-background and OCR",
        "## A segmentation model: `@pixport/background-onnx`",
        "## Remove background at the model's own speed",
        "## Usage",
        "## Usage",
        "```sh",
        "# not a heading",
        "```",
      ].join("\n"),
    );
    expect([...anchors]).toEqual([
      "offline-image-intelligence-remove-background-and-ocr",
      "a-segmentation-model-pixportbackground-onnx",
      "remove-background-at-the-models-own-speed",
      "usage",
      "usage-1",
    ]);
  });

  it("resolves every relative link to a file of the repository, and every anchor to a heading", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of [...pages, ...otherPages]) {
      const markdown = readFileSync(path.join(root, page), "utf8");
      for (const { line, target } of links(markdown)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        checked += 1;
        const [file = "", anchor] = target.split("#");
        const resolved =
          file === "" ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), file);
        if (!resolved.startsWith(root) || !existsSync(resolved)) {
          broken.push(`${page}:${line}: ${target} (no such file)`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
          broken.push(`${page}:${line}: ${target} (an anchor into a file that is not markdown)`);
          continue;
        }
        if (!headingAnchors(readFileSync(resolved, "utf8")).has(anchor)) {
          broken.push(`${page}:${line}: ${target} (no heading with that anchor)`);
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });

  it("links every page of docs/ from the README", () => {
    const readme = readFileSync(path.join(root, "README.md"), "utf8");
    const linked = new Set(links(readme).map(({ target }) => target.split("#")[0]));
    const missing = pages.filter((page) => page.startsWith("docs/") && !linked.has(page));
    expect(missing).toEqual([]);
  });

  it("keeps README.md under 300 lines", () => {
    expect(readFileSync(path.join(root, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300);
  });
});

interface Block {
  page: string;
  line: number;
  info: string;
  code: string;
}

/** The code blocks marked runnable: ` ```ts check ` anywhere, ` ```ts quickstart=<name> ` in the README. */
function runnableBlocks(): Block[] {
  const blocks: Block[] = [];
  for (const page of pages) {
    const lines = readFileSync(path.join(root, page), "utf8").split("\n");
    for (let index = 0; index < lines.length; index += 1) {
      const open = /^```(ts (?:check|quickstart=[a-z-]+))\s*$/.exec(lines[index]!);
      if (open === null) continue;
      const end = lines.indexOf("```", index + 1);
      if (end === -1) throw new Error(`${page}:${index + 1}: an unclosed code block`);
      blocks.push({
        page,
        line: index + 1,
        info: open[1]!,
        code: `${lines.slice(index + 1, end).join("\n")}\n`,
      });
      index = end;
    }
  }
  return blocks;
}

describe("runnable code blocks", () => {
  const blocks = runnableBlocks();
  // Inside test/, so that `@pixport/*` resolve to the workspace's packages as test files do; a
  // dot-directory, so that nothing else (tsc's globs, vitest) picks it up.
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(root, "test", ".docs-blocks-"));
    blocks.forEach((block, index) => {
      const name = `${String(index).padStart(2, "0")}-${path.basename(block.page, ".md")}-${block.line}.ts`;
      writeFileSync(path.join(dir, name), `// ${block.page}:${block.line}\n${block.code}`);
    });
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("finds the README's two quick starts and the blocks marked `check` in docs/", () => {
    const infos = blocks.map((block) => `${block.page} ${block.info}`);
    expect(infos).toContain("README.md ts quickstart=library");
    expect(infos).toContain("README.md ts quickstart=express");
    expect(blocks.filter((block) => block.info === "ts check").length).toBeGreaterThanOrEqual(3);
  });

  it("type-checks every one against the workspace's sources", async () => {
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        extends: "../../tsconfig.base.json",
        compilerOptions: { noEmit: true, declaration: false, sourceMap: false, types: ["node"] },
        include: ["*.ts"],
      }),
    );
    const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.json")], {
      cwd: dir,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? "",
      stderr: error.stderr ?? String(error),
    }));
    expect(`${result.stdout}${result.stderr}`).toBe("");
  }, 180_000);

  it.each(["library", "express"])(
    "runs the README's %s quick start as written: it prints and exits 0",
    async (name) => {
      const index = blocks.findIndex((block) => block.info === `ts quickstart=${name}`);
      const file = readdirSync(dir).find((entry) => entry.startsWith(`${String(index).padStart(2, "0")}-`))!;
      const cwd = mkdtempSync(path.join(tmpdir(), `pixport-quickstart-${name}-`));
      try {
        const { stdout } = await run(
          path.join(root, "node_modules", ".bin", "tsx"),
          ["--conditions=pixport-source", path.join(dir, file)],
          { cwd, env: { ...process.env, IMAGE: "" }, timeout: 60_000 },
        );
        if (name === "library") {
          expect(stdout).toMatch(
            /^image_[a-z0-9]{24}: 400x300 webp, \d+ bytes at https:\/\/cdn\.example\.com\/images\/image_[a-z0-9]{24}\.webp\n$/,
          );
          expect(existsSync(path.join(cwd, "thumb.webp"))).toBe(true);
        } else {
          expect(stdout).toMatch(/^201 \{/);
          expect(stdout).toContain("name: 'square'");
          expect(stdout).toContain("format: 'png'");
        }
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    },
    90_000,
  );
});
