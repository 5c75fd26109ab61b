import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The product is reference, not a development diary: no numbered work sessions, no issue numbers
 * and no dated change notes ("until <a date>, ...") in the markdown or in code comments. History
 * belongs in git. Comments keep the why, with a pointer to the page that holds a figure.
 * BENCHMARKS.md dates its measurements ("Measured <date>, ..."), and nothing else.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const ORDINALS =
  "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|" +
  "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|last|previous|next|" +
  "this|that|earlier|later|\\d+(?:st|nd|rd|th)";
/** Patterns that name a work session or an issue, anywhere in a comment or a page. */
const DIARY: RegExp[] = [
  new RegExp(`\\b(?:${ORDINALS}) (?:work )?sessions?\\b`, "i"),
  /\bsessions? of (?:the day|20\d\d)\b/i,
  /\bsession \d+\b/i,
  /\bissues? #?\d+\b/i,
  /(?:^|[\s(])#\d{1,4}\b(?![\d.])/,
];
/** A calendar date, not a timestamp (`2026-11-28T07:00:00Z` in an example is data). */
const DATE = /\b20\d\d-\d\d-\d\d\b(?!T\d)/;

const SOURCE = /\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/;

/** A file without an extension that starts with a shell shebang (scripts/, the server's bin/). */
function isShellScript(file: string): boolean {
  if (path.basename(file).includes(".")) return false;
  return /^#!.*\b(?:sh|bash)\b/.test(readFileSync(file, "utf8").slice(0, 80));
}
const SKIP_DIRS = new Set(["node_modules", "dist", ".git", ".pixport-data", "coverage"]);

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name) || entry.name.startsWith(".pixport")) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else out.push(full);
  }
  return out;
}

/** The comments of a JavaScript or TypeScript file, each with its first line number. */
export function comments(source: string): { line: number; text: string }[] {
  const found: { line: number; text: string }[] = [];
  let line = 1;
  let index = 0;
  let previous = ""; // the last significant character of code, to tell a regex from a division
  const lineAt = (from: number, to: number) => {
    for (let k = from; k < to; k += 1) if (source[k] === "\n") line += 1;
  };
  while (index < source.length) {
    const char = source[index]!;
    const next = source[index + 1];
    if (char === "/" && next === "/") {
      const end = source.indexOf("\n", index);
      const stop = end === -1 ? source.length : end;
      found.push({ line, text: source.slice(index + 2, stop) });
      index = stop;
      continue;
    }
    if (char === "/" && next === "*") {
      const end = source.indexOf("*/", index + 2);
      const stop = end === -1 ? source.length : end + 2;
      found.push({ line, text: source.slice(index + 2, stop - 2) });
      lineAt(index, stop);
      index = stop;
      continue;
    }
    if (char === '"' || char === "'" || char === "`") {
      let k = index + 1;
      while (k < source.length && source[k] !== char) {
        if (source[k] === "\\") k += 1;
        else if (char !== "`" && source[k] === "\n") break;
        k += 1;
      }
      lineAt(index, k + 1);
      index = k + 1;
      previous = char;
      continue;
    }
    if (char === "/" && (previous === "" || "(,=:[!&|?{};+-*%<>~^".includes(previous))) {
      // A regular expression literal: skip to its closing slash (outside a character class).
      let k = index + 1;
      let inClass = false;
      while (k < source.length && source[k] !== "\n") {
        if (source[k] === "\\") k += 1;
        else if (source[k] === "[") inClass = true;
        else if (source[k] === "]") inClass = false;
        else if (source[k] === "/" && !inClass) break;
        k += 1;
      }
      index = k + 1;
      previous = "/";
      continue;
    }
    if (char === "\n") line += 1;
    if (!/\s/.test(char)) previous = char;
    index += 1;
  }
  return found;
}

/** The comments of a shell script: what follows a `#` that begins a word. */
function shellComments(script: string): { line: number; text: string }[] {
  return script.split("\n").flatMap((text, index) => {
    const comment = /(?:^|\s)#(?!!)(.*)$/.exec(text);
    return comment === null ? [] : [{ line: index + 1, text: comment[1]! }];
  });
}

/** The prose of a markdown file: every line outside fenced code blocks, inline code removed. */
function prose(markdown: string): { line: number; text: string }[] {
  const lines: { line: number; text: string }[] = [];
  let fenced = false;
  markdown.split("\n").forEach((text, index) => {
    if (/^\s*(```|~~~)/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (!fenced) lines.push({ line: index + 1, text: text.replace(/`[^`]*`/g, "``") });
  });
  return lines;
}

describe("no development diary in the product", () => {
  const files = [
    ...walk(root).filter((file) => {
      const relative = path.relative(root, file);
      // Generated from the OpenAPI document; its examples are data.
      if (relative.endsWith("schema.gen.ts")) return false;
      return relative.endsWith(".md") || SOURCE.test(relative) || isShellScript(file);
    }),
    path.join(root, ".ci", "run"),
  ];
  const commentsOf = (file: string, text: string) =>
    file.endsWith(".md") ? null : isShellScript(file) ? shellComments(text) : comments(text);

  it("names no work session and no issue number in any page or code comment", () => {
    expect(files.length).toBeGreaterThan(200);
    const hits: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      const parts =
        commentsOf(file, text) ?? text.split("\n").map((line, index) => ({ line: index + 1, text: line }));
      for (const part of parts) {
        for (const pattern of DIARY) {
          const match = pattern.exec(part.text);
          if (match !== null) hits.push(`${path.relative(root, file)}:${part.line}: ${match[0]}`);
        }
      }
    }
    expect(hits).toEqual([]);
  });

  it("dates no change note: dates appear only as BENCHMARKS.md's measurement dates", () => {
    const hits: string[] = [];
    for (const file of files) {
      const relative = path.relative(root, file);
      const text = readFileSync(file, "utf8");
      const parts = commentsOf(file, text) ?? prose(text);
      for (const part of parts) {
        const match = DATE.exec(part.text);
        if (match === null) continue;
        if (relative === "BENCHMARKS.md" && /\b[Mm]easured (?:on )?20\d\d-\d\d-\d\d\b/.test(part.text)) {
          continue;
        }
        hits.push(`${relative}:${part.line}: ${part.text.trim()}`);
      }
    }
    expect(hits).toEqual([]);
  });

  it("reads comments the way the checks above need", () => {
    const found = comments(
      [
        'const url = "https://example.com/a"; // a comment',
        "const pattern = /\\/\\/ not a comment/g; /* block",
        "comment */ const t = `// not one either`;",
      ].join("\n"),
    );
    expect(found).toEqual([
      { line: 1, text: " a comment" },
      { line: 2, text: " block\ncomment " },
    ]);
  });
});
