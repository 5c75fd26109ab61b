import { describe, expect, it } from "vitest";
import { activeAllocator, forgetLauncherPreload } from "../src/allocator.js";

const maps = (library: string) =>
  [
    "55d0c0a00000-55d0c0b00000 r-xp 00000000 08:01 1234 /usr/bin/node",
    `7f1c2a000000-7f1c2a020000 r-xp 00000000 08:01 5678 ${library}`,
    "7f1c2b000000-7f1c2b200000 r-xp 00000000 08:01 9012 /usr/lib/x86_64-linux-gnu/libc.so.6",
  ].join("\n");

describe("activeAllocator", () => {
  it("names the malloc library mapped into the process", () => {
    expect(activeAllocator(maps("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10"))).toBe("tcmalloc");
    expect(activeAllocator(maps("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"))).toBe("jemalloc");
    expect(activeAllocator(maps("/opt/lib/libmimalloc.so.2.0"))).toBe("mimalloc");
  });

  it("answers system for glibc alone and where there is no memory map", () => {
    expect(activeAllocator(maps("/usr/lib/x86_64-linux-gnu/libm.so.6"))).toBe("system");
    expect(activeAllocator(undefined)).toBe("system");
  });

  it("reads this process's own map on Linux", () => {
    // Vitest runs on the system malloc unless the machine preloads one for every process.
    const expected = /tcmalloc|jemalloc|mimalloc/.test(process.env.LD_PRELOAD ?? "") ? /malloc/ : /^system$/;
    expect(activeAllocator()).toMatch(expected);
  });
});

describe("forgetLauncherPreload", () => {
  it("takes the launcher's library out of LD_PRELOAD and keeps the rest", () => {
    const env: NodeJS.ProcessEnv = {
      PIXPORT_PRELOADED: "/usr/lib/libtcmalloc_minimal.so.4",
      LD_PRELOAD: "/usr/lib/libtcmalloc_minimal.so.4:/opt/profiler.so",
    };
    forgetLauncherPreload(env);
    expect(env).toEqual({ LD_PRELOAD: "/opt/profiler.so" });
  });

  it("removes LD_PRELOAD when the launcher's library was all of it", () => {
    const env: NodeJS.ProcessEnv = {
      PIXPORT_PRELOADED: "/usr/lib/libtcmalloc_minimal.so.4",
      LD_PRELOAD: "/usr/lib/libtcmalloc_minimal.so.4",
      PATH: "/usr/bin",
    };
    forgetLauncherPreload(env);
    expect(env).toEqual({ PATH: "/usr/bin" });
  });

  it("leaves a preload the launcher did not make alone", () => {
    const env: NodeJS.ProcessEnv = { LD_PRELOAD: "/usr/lib/libjemalloc.so.2" };
    forgetLauncherPreload(env);
    expect(env).toEqual({ LD_PRELOAD: "/usr/lib/libjemalloc.so.2" });
  });
});
