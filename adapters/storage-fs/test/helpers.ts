import type { FileHandle } from "node:fs/promises";
import * as nodeFs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FsPromises } from "../src/index.js";

/** A fresh directory under the OS temp dir; remove it with {@link removeDirectory}. */
export function makeTempDirectory(prefix = "pixport-fs-"): Promise<string> {
  return nodeFs.mkdtemp(path.join(os.tmpdir(), prefix));
}

export function removeDirectory(directory: string): Promise<void> {
  return nodeFs.rm(directory, { recursive: true, force: true });
}

/** A Node.js-style system error, as the real fs functions throw. */
export function systemError(code: string, syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: simulated failure, ${syscall}`), { code, syscall, errno: -1 });
}

/** One observed call: `sync` of a path (file or directory), `rename`, `link` or `unlink`. */
export interface FsEvent {
  call: "sync" | "rename" | "link" | "unlink" | "open";
  path: string;
  target?: string;
}

/**
 * The real fs functions, recording every `open`, handle `sync`, `rename`, `link` and `unlink` in
 * call order. `fail` can throw instead of calling through.
 */
export function recordingFs(
  fail?: (event: FsEvent & { flags?: unknown }) => NodeJS.ErrnoException | undefined,
): { fs: FsPromises; events: FsEvent[] } {
  const events: FsEvent[] = [];
  const check = (event: FsEvent & { flags?: unknown }) => {
    const error = fail?.(event);
    if (error !== undefined) throw error;
    if (event.call !== "open") events.push({ call: event.call, path: event.path, target: event.target });
  };
  const wrapHandle = (handle: FileHandle, file: string): FileHandle =>
    new Proxy(handle, {
      get(target, property) {
        if (property === "sync" || property === "datasync") {
          // fsync and fdatasync both make the file's bytes durable; the order tests treat them alike.
          return async () => {
            check({ call: "sync", path: file });
            return property === "sync" ? target.sync() : target.datasync();
          };
        }
        if (property === "writeFile") {
          return async (...args: Parameters<FileHandle["writeFile"]>) => {
            const error = fail?.({ call: "open", path: file, flags: "writeFile" });
            if (error !== undefined) throw error;
            return target.writeFile(...args);
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const fs: FsPromises = {
    ...nodeFs,
    open: (async (file: string, flags?: string | number, mode?: number) => {
      check({ call: "open", path: String(file), flags });
      return wrapHandle(await nodeFs.open(file, flags, mode), String(file));
    }) as FsPromises["open"],
    rename: async (from, to) => {
      check({ call: "rename", path: String(from), target: String(to) });
      return nodeFs.rename(from, to);
    },
    link: async (from, to) => {
      check({ call: "link", path: String(from), target: String(to) });
      return nodeFs.link(from, to);
    },
    unlink: async (file) => {
      check({ call: "unlink", path: String(file) });
      return nodeFs.unlink(file);
    },
  };
  return { fs, events };
}

/** Every file below `directory`, as paths relative to it with `/` separators. */
export async function listFiles(directory: string): Promise<string[]> {
  const entries = await nodeFs.readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) =>
      path.relative(directory, path.join(entry.parentPath, entry.name)).split(path.sep).join("/"),
    )
    .sort();
}
