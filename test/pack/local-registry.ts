import { execFileSync } from "node:child_process";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

/**
 * An npm registry on loopback that serves two kinds of packages, so that npm can install into an
 * app outside the workspace with no network (the suite runs in a loopback-only namespace):
 * - the workspace's packed tarballs (`pnpm pack` output), exactly as they would be published;
 * - every third-party package the workspace's install holds, read from pnpm's virtual store
 *   (`node_modules/.pnpm/<id>/node_modules/<name>`), packed on request.
 * A name it does not hold answers 404, as the public registry does for an unknown name; npm then
 * skips it only if it is optional (platform builds of sharp for other systems, for example).
 */
export interface LocalRegistry {
  url: string;
  /** Names requested that the registry does not hold (each answered 404). */
  misses: Set<string>;
  /** Tarballs served, by "name@version". */
  served: Set<string>;
  close(): Promise<void>;
}

interface Entry {
  manifest: Record<string, unknown>;
  /** A tarball's bytes, or the package directory to pack on request. */
  source: { tarball: Buffer } | { dir: string };
}

/** Every package directory pnpm's virtual store holds, as name → version → directory. */
function virtualStore(storeDir: string): Map<string, Map<string, string>> {
  const found = new Map<string, Map<string, string>>();
  const add = (dir: string) => {
    let manifest: { name?: string; version?: string };
    try {
      manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    } catch {
      return;
    }
    if (manifest.name === undefined || manifest.version === undefined) return;
    const versions = found.get(manifest.name) ?? new Map<string, string>();
    if (!versions.has(manifest.version)) versions.set(manifest.version, dir);
    found.set(manifest.name, versions);
  };
  for (const id of readdirSync(storeDir)) {
    const modules = path.join(storeDir, id, "node_modules");
    let names: string[];
    try {
      names = readdirSync(modules);
    } catch {
      continue;
    }
    // The entry's own package is the one real directory; its dependencies are symlinks.
    for (const name of names) {
      const dir = path.join(modules, name);
      if (name.startsWith("@")) {
        for (const inner of readdirSync(dir)) {
          const scoped = path.join(dir, inner);
          if (!lstatSync(scoped).isSymbolicLink()) add(scoped);
        }
      } else if (!lstatSync(dir).isSymbolicLink()) {
        add(dir);
      }
    }
  }
  return found;
}

/** The manifest inside a .tgz (npm's layout: `package/package.json`). */
function manifestOfTarball(file: string): Record<string, unknown> {
  return JSON.parse(execFileSync("tar", ["-xzOf", file, "package/package.json"], { encoding: "utf8" }));
}

/** The highest of some versions (release versions above prereleases of the same numbers). */
function highest(versions: string[]): string | undefined {
  const key = (version: string) => {
    const [release = "", pre] = version.split("-", 2);
    return [...release.split(".").map(Number), pre === undefined ? 1 : 0];
  };
  return versions.reduce<string | undefined>((best, version) => {
    if (best === undefined) return version;
    const a = key(version);
    const b = key(best);
    for (let i = 0; i < a.length; i++) {
      if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0) ? version : best;
    }
    return best;
  }, undefined);
}

export async function startLocalRegistry(options: {
  /** The workspace's packed tarballs. */
  tarballs: string[];
  /** pnpm's virtual store: `<workspace>/node_modules/.pnpm`. */
  storeDir: string;
}): Promise<LocalRegistry> {
  const packages = new Map<string, Map<string, Entry>>();
  for (const [name, versions] of virtualStore(options.storeDir)) {
    const entries = new Map<string, Entry>();
    for (const [version, dir] of versions) {
      entries.set(version, {
        manifest: JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")),
        source: { dir },
      });
    }
    packages.set(name, entries);
  }
  for (const file of options.tarballs) {
    const manifest = manifestOfTarball(file);
    const name = manifest.name as string;
    // The workspace's own packages are served only from their tarballs.
    packages.set(
      name,
      new Map([[manifest.version as string, { manifest, source: { tarball: readFileSync(file) } }]]),
    );
  }

  const misses = new Set<string>();
  const served = new Set<string>();
  const packed = new Map<string, Buffer>();
  let base = "";

  const server: Server = createServer((request, response) => {
    const url = decodeURIComponent((request.url ?? "/").split("?")[0] ?? "/");
    const tarball = /^\/-\/tarball\/(.+)\/([^/]+)\.tgz$/.exec(url);
    if (tarball !== null) {
      const [, name = "", version = ""] = tarball;
      const entry = packages.get(name)?.get(version);
      if (entry === undefined) {
        response.writeHead(404).end();
        return;
      }
      const key = `${name}@${version}`;
      const { source } = entry;
      let bytes = "tarball" in source ? source.tarball : packed.get(key);
      if (bytes === undefined && "dir" in source) {
        bytes = gzipDirectory(source.dir);
        packed.set(key, bytes);
      }
      if (bytes === undefined) throw new Error(`No tarball for ${key}`);
      served.add(key);
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": bytes.length });
      response.end(bytes);
      return;
    }
    const name = url.slice(1);
    const versions = packages.get(name);
    if (versions === undefined) {
      misses.add(name);
      response.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
      return;
    }
    const packument = {
      name,
      "dist-tags": { latest: highest([...versions.keys()]) },
      versions: Object.fromEntries(
        [...versions].map(([version, entry]) => [
          version,
          {
            ...entry.manifest,
            _id: `${name}@${version}`,
            dist: { tarball: `${base}/-/tarball/${name}/${version}.tgz` },
          },
        ]),
      ),
    };
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${base}/`,
    misses,
    served,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A package directory as npm's tarball layout (`package/...`), gzipped fast. */
function gzipDirectory(dir: string): Buffer {
  return execFileSync(
    "sh",
    [
      "-c",
      'tar -cf - -C "$1" --hard-dereference --owner=0 --group=0 --exclude=./node_modules --transform="s,^\\.,package," . | gzip -1',
      "pack",
      dir,
    ],
    { maxBuffer: 1 << 30 },
  );
}
