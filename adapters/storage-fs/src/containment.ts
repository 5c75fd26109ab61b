import path from "node:path";

/**
 * Whether `candidate` (absolute, normalised) is `root` itself or inside it. The comparison is
 * against `root + path.sep`, never a raw prefix: `/data/root123` must not count as inside
 * `/data/root` (ipx CVE-2025-54387).
 */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

/**
 * Resolves `relative` against `root` and throws a `TypeError` unless the result is strictly inside
 * the root. Lexical only: symbolic links are checked separately with `realpath`.
 */
export function resolveInside(root: string, relative: string): string {
  const resolved = path.resolve(root, relative);
  if (resolved === root || !isInside(root, resolved)) {
    throw new TypeError(
      `Expected a path inside the storage root for ${JSON.stringify(relative)}, received one that resolves outside it.`,
    );
  }
  return resolved;
}
