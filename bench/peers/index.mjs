// The benchmarks' reference software (IMG.LY's background remover and its model data, IPX) lives in
// bench/peers, installed with its own npm lockfile by `npx --yes pnpm@12 bench:peers`, not by the
// workspace install: the product, its tests and its tools never need it.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "package.json"));

/** Why a peer cannot be used, or undefined when it is installed. */
export function peerMissing(name) {
  if (existsSync(path.join(here, "node_modules", name, "package.json"))) return undefined;
  return `${name} is a benchmark peer, not installed: run \`npx --yes pnpm@12 bench:peers\``;
}

/** A file of an installed peer, e.g. `resolvePeer("@imgly/background-removal-data/package.json")`. */
export function resolvePeer(specifier) {
  const name = specifier.startsWith("@")
    ? specifier.split("/").slice(0, 2).join("/")
    : specifier.split("/")[0];
  const missing = peerMissing(name);
  if (missing !== undefined) throw new Error(missing);
  return require.resolve(specifier);
}

/** Imports an installed peer's ES module entry. */
export async function importPeer(name) {
  const missing = peerMissing(name);
  if (missing !== undefined) throw new Error(missing);
  // Resolved from this directory, so bench/peers/node_modules is where it is found.
  return import(import.meta.resolve(name));
}
