/** What {@link sweepOwnerlessDirectories} reads and removes; adapters pass `node:fs` and `process`. */
export interface OwnerlessDirectorySweep {
  /** Start of the directories' names; the owner's process id follows it, then `-` (what `mkdtemp` adds). */
  prefix: string;
  /** The names in the parent directory (an empty list when it cannot be read). */
  list(): Promise<readonly string[]>;
  /** Removes one directory of the parent, recursively. */
  remove(name: string): Promise<void>;
  /**
   * Whether process `pid` still runs: `true`, `false`, or `null` when it cannot be told (then the
   * directory is kept). With Node: `process.kill(pid, 0)`, where `ESRCH` means gone.
   */
  isRunning(pid: number): boolean | null;
  /** This process's id: its own directories are never swept. */
  pid: number;
}

/**
 * Removes private temporary directories named `{prefix}{pid}-*` whose owning process no longer
 * runs (a crash skips the owner's cleanup), so they cannot pile up. Directories of running
 * processes, of this process and names that do not parse are kept. Answers how many were removed.
 *
 * @example
 * ```ts
 * await sweepOwnerlessDirectories({
 *   prefix: "my-adapter-",
 *   pid: process.pid,
 *   list: () => readdir(tmpdir()).catch(() => []),
 *   remove: (name) => rm(path.join(tmpdir(), name), { recursive: true, force: true }),
 *   isRunning: processIsRunning,
 * });
 * const directory = await mkdtemp(path.join(tmpdir(), `my-adapter-${process.pid}-`));
 * ```
 */
export async function sweepOwnerlessDirectories(sweep: OwnerlessDirectorySweep): Promise<number> {
  const names = await sweep.list();
  const removed = await Promise.all(
    names.map(async (name) => {
      if (!name.startsWith(sweep.prefix)) return false;
      const owner = name.slice(sweep.prefix.length).split("-")[0] ?? "";
      const pid = /^[0-9]+$/.test(owner) ? Number(owner) : Number.NaN;
      if (!Number.isSafeInteger(pid) || pid <= 0 || pid === sweep.pid) return false;
      if (sweep.isRunning(pid) !== false) return false;
      await sweep.remove(name);
      return true;
    }),
  );
  return removed.filter(Boolean).length;
}

/**
 * The Node calls {@link sweepTemporaryDirectories} makes (the core imports no `node:` module):
 * `readdir` and `rm` of `node:fs/promises`, the parent directory (`os.tmpdir()`) and `process`.
 */
export interface TemporaryDirectoryHost {
  directory: string;
  readdir(path: string): Promise<string[]>;
  rm(path: string, options: { recursive: true; force: true }): Promise<void>;
  process: { pid: number; kill(pid: number, signal: 0): unknown };
}

/**
 * {@link sweepOwnerlessDirectories} over a directory of Node's file system: removes the
 * `{prefix}{pid}-*` directories of `host.directory` whose process is gone (`kill(pid, 0)` fails
 * with `ESRCH`; any other failure keeps the directory). Answers how many were removed.
 *
 * @example
 * ```ts
 * import { mkdtemp, readdir, rm } from "node:fs/promises";
 * import { tmpdir } from "node:os";
 * await sweepTemporaryDirectories("my-adapter-", { directory: tmpdir(), readdir, rm, process });
 * const directory = await mkdtemp(path.join(tmpdir(), `my-adapter-${process.pid}-`));
 * ```
 */
export function sweepTemporaryDirectories(prefix: string, host: TemporaryDirectoryHost): Promise<number> {
  return sweepOwnerlessDirectories({
    prefix,
    pid: host.process.pid,
    list: () => host.readdir(host.directory).catch(() => []),
    remove: (name) => host.rm(`${host.directory}/${name}`, { recursive: true, force: true }),
    isRunning: (pid) => {
      try {
        host.process.kill(pid, 0);
        return true;
      } catch (error) {
        return (error as { code?: unknown }).code === "ESRCH" ? false : null;
      }
    },
  });
}
