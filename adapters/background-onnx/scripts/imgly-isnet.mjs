// Reassembles the IS-Net segmentation model that IMG.LY ships, in 4 MB chunks, inside the
// `@imgly/background-removal-data` npm package, into one .onnx file, offline, from the installed
// package. Test- and benchmark-only: the package is AGPL-3.0-licensed, a benchmark peer installed
// apart from the workspace (bench/peers, `npx --yes pnpm@12 bench:peers`), and never bundled,
// published or redistributed by pixport.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const peers = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../bench/peers");
const require = createRequire(path.join(peers, "package.json"));

/**
 * Why the model cannot be built here (its package is not installed), or undefined when it can.
 *
 * @returns {string | undefined}
 */
export function imglyIsnetMissing() {
  if (existsSync(path.join(peers, "node_modules/@imgly/background-removal-data/package.json")))
    return undefined;
  return "needs IMG.LY's IS-Net model, a benchmark peer: run `npx --yes pnpm@12 bench:peers` to install it";
}

/**
 * Returns the path of the reassembled model, building it under the OS temp directory on first use
 * (every chunk's SHA-256 is checked against the package's manifest; the file is written to a
 * temporary name and renamed, so concurrent callers never see half a model).
 *
 * @param {"small" | "medium"} variant `small`: 8-bit quantised (44 MB); `medium`: fp16 weights (88 MB).
 * @returns {string}
 */
export function imglyIsnetModelPath(variant = "small") {
  const dist = path.join(
    path.dirname(require.resolve("@imgly/background-removal-data/package.json")),
    "dist",
  );
  const manifest = JSON.parse(readFileSync(path.join(dist, "resources.json"), "utf8"));
  const entry = manifest[`/models/${variant}`];
  if (entry === undefined) throw new Error(`@imgly/background-removal-data has no model "${variant}".`);
  const version = require("@imgly/background-removal-data/package.json").version;
  const target = path.join(tmpdir(), "pixport-models", `imgly-isnet-${variant}-${version}.onnx`);
  try {
    if (statSync(target).size === entry.size) return target;
  } catch {
    // Not built yet.
  }
  mkdirSync(path.dirname(target), { recursive: true });
  const parts = entry.chunks.map((chunk) => {
    const bytes = readFileSync(path.join(dist, chunk.hash));
    const digest = createHash("sha256").update(bytes).digest("hex");
    if (digest !== chunk.hash) throw new Error(`Chunk ${chunk.hash} of the IS-Net model is corrupt.`);
    return bytes;
  });
  const model = Buffer.concat(parts);
  if (model.length !== entry.size)
    throw new Error(`The IS-Net model is ${model.length} bytes, expected ${entry.size}.`);
  const temporary = `${target}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, model);
  renameSync(temporary, target);
  return target;
}
