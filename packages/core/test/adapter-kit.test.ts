import { describe, expect, it } from "vitest";
import {
  imageTooLarge,
  invalidImage,
  type OwnerlessDirectorySweep,
  sweepOwnerlessDirectories,
  sweepTemporaryDirectories,
  unsupportedOperation,
} from "../src/adapter-kit.js";
import { ErrorCodes, isImagePipelineError } from "../src/index.js";

describe("sweepOwnerlessDirectories", () => {
  function sweep(names: string[], running: Record<number, boolean | null>) {
    const removed: string[] = [];
    const options: OwnerlessDirectorySweep = {
      prefix: "pixport-x-",
      pid: 100,
      list: async () => names,
      remove: async (name) => {
        removed.push(name);
      },
      isRunning: (pid) => (pid in running ? (running[pid] as boolean | null) : false),
    };
    return { removed, run: () => sweepOwnerlessDirectories(options) };
  }

  it("removes only directories of the prefix whose owner is gone", async () => {
    const { removed, run } = sweep(
      [
        "pixport-x-200-abc", // owner gone
        "pixport-x-300-def", // owner runs
        "pixport-x-400-ghi", // unknown (EPERM): kept
        "pixport-x-100-own", // this process
        "pixport-x-abc-def", // no pid
        "pixport-x-0-zero", // not a pid
        "other-200-abc", // another prefix
      ],
      { 300: true, 400: null },
    );
    expect(await run()).toBe(1);
    expect(removed).toEqual(["pixport-x-200-abc"]);
  });

  it("does nothing in an empty directory", async () => {
    const { removed, run } = sweep([], {});
    expect(await run()).toBe(0);
    expect(removed).toEqual([]);
  });
});

describe("sweepTemporaryDirectories", () => {
  it("reads the directory, asks kill(pid, 0), and removes only what ESRCH says is ownerless", async () => {
    const removed: string[] = [];
    const errno = (code: string) => Object.assign(new Error(code), { code });
    const host = {
      directory: "/tmp",
      readdir: async (path: string) =>
        path === "/tmp" ? ["p-200-a", "p-300-b", "p-400-c", "p-100-own"] : [],
      rm: async (path: string) => {
        removed.push(path);
      },
      process: {
        pid: 100,
        kill: (pid: number) => {
          if (pid === 200) throw errno("ESRCH");
          if (pid === 400) throw errno("EPERM");
          return true;
        },
      },
    };
    expect(await sweepTemporaryDirectories("p-", host)).toBe(1);
    expect(removed).toEqual(["/tmp/p-200-a"]);
  });

  it("sweeps nothing when the directory cannot be read", async () => {
    const host = {
      directory: "/gone",
      readdir: async () => Promise.reject(new Error("ENOENT")),
      rm: async () => undefined,
      process: { pid: 1, kill: () => true },
    };
    expect(await sweepTemporaryDirectories("p-", host)).toBe(0);
  });
});

describe("shared codec errors", () => {
  it("carry the catalog's codes and the caller's cause", () => {
    const cause = new Error("bad huffman table");
    const invalid = invalidImage("The input could not be decoded.", cause);
    expect(isImagePipelineError(invalid) && invalid.code).toBe(ErrorCodes.INVALID_IMAGE);
    expect(invalid.cause).toBe(cause);
    expect(unsupportedOperation("no animation").code).toBe(ErrorCodes.UNSUPPORTED_OPERATION);
    const large = imageTooLarge("The input", 20_000, 10_000, 100_000_000);
    expect(large.code).toBe(ErrorCodes.IMAGE_TOO_LARGE);
    expect(large.message).toBe(
      "The input is 20000 x 10000 pixels, over the decoder's limit of 100000000 pixels (limits.maxInputPixels).",
    );
  });
});
