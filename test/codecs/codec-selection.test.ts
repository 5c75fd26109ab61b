import { isImagePipelineError } from "@pixport/core";
import { loadServerConfig, resolveServerConfig } from "@pixport/server";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { removeDir, startServer, tempDataDir } from "../e2e/harness.js";

describe("codec selection in the server config", () => {
  it("defaults to sharp and accepts jimp", () => {
    expect(resolveServerConfig({}).codec).toBe("sharp");
    expect(resolveServerConfig({ codec: "jimp" }).codec).toBe("jimp");
  });

  it("reads PIXPORT_CODEC, and a flag (override) wins over the environment", async () => {
    expect((await loadServerConfig({ environment: { PIXPORT_CODEC: "jimp" } })).codec).toBe("jimp");
    const overridden = await loadServerConfig({
      environment: { PIXPORT_CODEC: "jimp" },
      overrides: { codec: "sharp" },
    });
    expect(overridden.codec).toBe("sharp");
  });

  it("rejects an unknown codec at start, naming the key", async () => {
    const error = await loadServerConfig({ environment: { PIXPORT_CODEC: "gm" } }).catch((caught) => caught);
    expect(isImagePipelineError(error)).toBe(true);
    expect((error as Error).message).toContain('codec must be one of "sharp", "jimp", received "gm"');
  });

  it("keeps 64 MiB of decoded sources by default; PIXPORT_SOURCE_CACHE_BYTES sets it, 0 or off turns it off", async () => {
    expect(resolveServerConfig({}).sourceCacheBytes).toBe(64 * 1024 * 1024);
    const read = async (value: string) =>
      (await loadServerConfig({ environment: { PIXPORT_SOURCE_CACHE_BYTES: value } })).sourceCacheBytes;
    expect(await read("1048576")).toBe(1_048_576);
    expect(await read("0")).toBe(0);
    expect(await read("off")).toBe(0);
    const error = await read("-5").catch((caught) => caught);
    expect(isImagePipelineError(error)).toBe(true);
    expect((error as Error).message).toContain("sourceCacheBytes");
  });

  it("turns libvips' operation cache off unless vipsCache (PIXPORT_VIPS_CACHE) asks for it", async () => {
    expect(resolveServerConfig({}).vipsCache).toBe(false);
    const read = async (value: string) =>
      (await loadServerConfig({ environment: { PIXPORT_VIPS_CACHE: value } })).vipsCache;
    expect(await read("on")).toBe(true);
    expect(await read("true")).toBe(true);
    expect(await read("off")).toBe(false);
    // The setting is libvips' own, process-wide: read back through sharp once each server started.
    const dataDir = await tempDataDir();
    try {
      for (const [vipsCache, items] of [
        [true, 100],
        [false, 0],
      ] as const) {
        const server = await startServer(dataDir, { vipsCache });
        try {
          expect(sharp.cache().items.max, `vipsCache ${vipsCache}`).toBe(items);
        } finally {
          await server.close();
        }
      }
    } finally {
      await removeDir(dataDir);
    }
  });
});
