import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import sharp from "sharp";

/**
 * Renders a document with librsvg (SVG text, DejaVu Sans). The sharp codec blocks untrusted
 * loaders process-wide when created; this file never creates it, and unblocks the SVG loader only
 * in case another file in the same worker process did.
 */
export async function renderDocument(): Promise<{ data: Uint8Array; width: number; height: number }> {
  const width = 900;
  const height = 620;
  const text = (x: number, y: number, size: number, value: string, weight = "normal") =>
    `<text x="${x}" y="${y}" font-size="${size}" font-weight="${weight}">${value}</text>`;
  const rows = [
    ["Fruit", "Price", "Stock"],
    ["Apple", "120", "40"],
    ["Pear", "90", "12"],
  ];
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
  <rect width="100%" height="100%" fill="white"/>
  <g font-family="DejaVu Sans" fill="black">
    ${text(40, 70, 44, "Quarterly Report", "bold")}
    ${text(40, 130, 20, "The warehouse shipped more parcels this quarter.")}
    ${text(40, 160, 20, "Returns fell sharply after the new packaging.")}
    ${text(60, 220, 20, "• Apples arrive on Monday")}
    ${text(60, 250, 20, "• Pears arrive on Tuesday")}
    ${text(60, 310, 20, "1. Open the crate")}
    ${text(60, 340, 20, "2. Count the fruit")}
    ${rows.map((row, index) => row.map((cell, column) => text(60 + column * 220, 420 + index * 40, 20, cell)).join("")).join("")}
  </g></svg>`;
  sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
  const data = await sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
  return { data, width, height };
}

/**
 * Reads the rendered page in a node process of its own (a script file, not -e: the tesseract.js
 * worker thread inherits the process's flags): `extractor` is the expression creating the
 * extractor, `ending` what the script does after printing the plain text (JSON) on stdout; with
 * `prelude`, statements run before the extractor is created, and `flags`, node's own; with
 * `early`, the extractor is created before the page's file is read. `text` is the first stdout
 * line that is a JSON string, `out` all of it. The process is killed if it has not exited after
 * 30 s. The script has `@pixport/allocator`'s `createAllocatorReleaser` and `limitMallocArenas` in
 * scope, and `releaserFor`: the releaser a host injects for the engine chosen (V8's garbage
 * collected first with tesseract.js).
 */
/** `@pixport/allocator`'s source, imported by the scripts of {@link readInOwnProcess}. */
const ALLOCATOR = new URL("../../allocator/src/index.ts", import.meta.url).href;

export async function readInOwnProcess(
  extractor: string,
  ending: string,
  { prelude = "", flags = [], early = false }: { prelude?: string; flags?: string[]; early?: boolean } = {},
): Promise<{ code: number | null; text: string; err: string; out: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), "pixport-own-process-"));
  try {
    const page = await renderDocument();
    await writeFile(path.join(directory, "page.jpg"), page.data);
    const script = path.join(directory, "read.mjs");
    await writeFile(
      script,
      `import { readFile } from "node:fs/promises";
      import { createTesseractTextExtractor } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
      import { createAllocatorReleaser, limitMallocArenas } from ${JSON.stringify(ALLOCATOR)};
      const releaserFor = (engine) =>
        createAllocatorReleaser({ collectGarbage: engine === "wasm" ? "always" : "exposed" });
      ${early ? `${prelude}\nconst extractor = ${extractor};` : ""}
      const data = new Uint8Array(await readFile(${JSON.stringify(path.join(directory, "page.jpg"))}));
      ${early ? "" : `${prelude}\nconst extractor = ${extractor};`}
      const image = { data, mimeType: "image/jpeg", width: ${page.width}, height: ${page.height} };
      console.log(JSON.stringify(await extractor.extract({ model: "tesseract", image, format: "plain" })));
      ${ending}`,
    );
    const child = spawn(process.execPath, [...flags, "--import", "tsx", script], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (err += chunk));
    const exit = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await exit;
    clearTimeout(timer);
    const line = out.split("\n").find((candidate) => candidate.startsWith('"'));
    return { code, text: line === undefined ? "" : JSON.parse(line), err, out };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
