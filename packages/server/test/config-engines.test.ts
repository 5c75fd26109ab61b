import { describe, expect, it } from "vitest";
import { loadServerConfig, resolveServerConfig } from "../src/config.js";

describe("backgroundRemoval config", () => {
  it("defaults to the embedded sharp remover", () => {
    expect(resolveServerConfig({}).backgroundRemoval).toEqual({ engine: "sharp", family: "isnet" });
  });

  it("selects the ONNX engine from PIXPORT_BACKGROUND_MODEL alone, and merges file, env and overrides", async () => {
    const fromEnv = await loadServerConfig({
      environment: { PIXPORT_BACKGROUND_MODEL: "/models/isnet.onnx", PIXPORT_BACKGROUND_THREADS: "2" },
    });
    expect(fromEnv.backgroundRemoval).toEqual({
      engine: "onnx",
      model: "/models/isnet.onnx",
      family: "isnet",
      threads: 2,
    });
    const merged = await loadServerConfig({
      environment: {
        PIXPORT_BACKGROUND_MODEL: "/models/u2net.onnx",
        PIXPORT_BACKGROUND_MODEL_FAMILY: "u2net",
      },
      overrides: { backgroundRemoval: { timeoutMs: 5000 } },
    });
    expect(merged.backgroundRemoval).toMatchObject({
      engine: "onnx",
      model: "/models/u2net.onnx",
      family: "u2net",
      timeoutMs: 5000,
    });
    const explicitSharp = await loadServerConfig({
      environment: { PIXPORT_BACKGROUND_ENGINE: "sharp", PIXPORT_BACKGROUND_MODEL: "/models/isnet.onnx" },
    });
    expect(explicitSharp.backgroundRemoval.engine).toBe("sharp");
  });

  it("refuses an onnx engine without a model, unknown families and keys, and bad numbers", () => {
    expect(() => resolveServerConfig({ backgroundRemoval: { engine: "onnx" } })).toThrow(
      /backgroundRemoval\.model: engine "onnx" needs model/,
    );
    expect(() =>
      resolveServerConfig({ backgroundRemoval: { engine: "onnx", model: "m", family: "sam" } }),
    ).toThrow(/backgroundRemoval\.family/);
    expect(() =>
      resolveServerConfig({ backgroundRemoval: { engine: "onnx", model: "m", gpu: true } }),
    ).toThrow(/backgroundRemoval/);
    expect(() =>
      resolveServerConfig({ backgroundRemoval: { engine: "onnx", model: "m", mean: [0.5, 0.5] } }),
    ).toThrow(/backgroundRemoval\.mean/);
    expect(() =>
      resolveServerConfig({ backgroundRemoval: { engine: "onnx", model: "m", threads: 0 } }),
    ).toThrow(/backgroundRemoval\.threads/);
  });
});

describe("workQueue config", () => {
  it("bounds every node by default and reads PIXPORT_MAX_* from the environment", async () => {
    expect(resolveServerConfig({}).workQueue).toEqual({ maxActive: 8, maxQueued: 32, maxWaitMs: 10_000 });
    const config = await loadServerConfig({
      environment: {
        PIXPORT_MAX_ACTIVE_JOBS: "2",
        PIXPORT_MAX_QUEUED_JOBS: "0",
        PIXPORT_MAX_JOB_WAIT_MS: "500",
      },
      overrides: { workQueue: { maxWaitMs: 750 } },
    });
    expect(config.workQueue).toEqual({ maxActive: 2, maxQueued: 0, maxWaitMs: 750 });
    expect(() => resolveServerConfig({ workQueue: { maxActive: 0 } })).toThrow(/workQueue\.maxActive/);
  });
});

describe("urlImport config from the environment", () => {
  it("switches import off, adds origins to the file's and sets the deadline", async () => {
    const config = await loadServerConfig({
      environment: {
        PIXPORT_URL_IMPORT: "false",
        PIXPORT_URL_IMPORT_ORIGINS: " images.example.com, *.cdn.example.org ,",
        PIXPORT_URL_IMPORT_TIMEOUT_MS: "12000",
      },
      overrides: { urlImport: { maxRedirects: 1 } },
    });
    expect(config.urlImport).toMatchObject({
      enabled: false,
      additionalOrigins: ["images.example.com", "*.cdn.example.org"],
      timeoutMs: 12_000,
      maxRedirects: 1,
    });
    expect(resolveServerConfig({}).urlImport.enabled).toBe(true);
    await expect(
      loadServerConfig({ environment: { PIXPORT_URL_IMPORT_ORIGINS: "http://bad/" } }),
    ).rejects.toThrow(/urlImport\.additionalOrigins/);
  });
});
