import { describe, expect, it } from "vitest";
import { defaultPublicBaseUrl, loadServerConfig, resolveServerConfig } from "../src/config.js";

describe("the default public base URL follows the bound address", () => {
  it("uses the host the server is bound to, and localhost for every interface", () => {
    expect(resolveServerConfig({ host: "127.0.0.1", port: 8080 }).publicBaseUrl).toBe(
      "http://127.0.0.1:8080",
    );
    expect(resolveServerConfig({ host: "0.0.0.0", port: 3000 }).publicBaseUrl).toBe("http://localhost:3000");
    expect(resolveServerConfig({ host: "::", port: 3000 }).publicBaseUrl).toBe("http://localhost:3000");
    expect(resolveServerConfig({ host: "::1", port: 3000 }).publicBaseUrl).toBe("http://[::1]:3000");
    expect(resolveServerConfig({}).publicBaseUrl).toBe("http://localhost:3000");
    expect(defaultPublicBaseUrl("192.168.1.5", 80)).toBe("http://192.168.1.5:80");
  });

  it("keeps a configured URL, and the storage base follows it", () => {
    const config = resolveServerConfig({
      host: "127.0.0.1",
      port: 8080,
      publicBaseUrl: "https://api.example.com/",
    });
    expect(config.publicBaseUrl).toBe("https://api.example.com");
    expect(config.publicStorageBaseUrl).toBe("https://api.example.com");
  });
});

describe("config errors read as the operator wrote the value", () => {
  it("names the key, the expected value and what was given, from the environment and from objects", async () => {
    const { loadServerConfig } = await import("../src/config.js");
    await expect(loadServerConfig({ environment: { PIXPORT_PORT: "abc" } })).rejects.toThrow(
      'Invalid configuration: port must be an integer between 0 and 65535, received "abc"',
    );
    expect(() => resolveServerConfig({ port: 70000 })).toThrow(
      "port must be an integer between 0 and 65535, received 70000",
    );
    expect(() => resolveServerConfig({ codec: "vips" })).toThrow(
      'codec must be one of "sharp", "jimp", received "vips"',
    );
    await expect(loadServerConfig({ environment: { PIXPORT_OCR_ENGINE: "cli" } })).rejects.toThrow(
      'ocrEngine must be one of "auto", "wasm", "native", received "cli"',
    );
    expect((await loadServerConfig({ environment: { PIXPORT_OCR_ENGINE: "native" } })).ocrEngine).toBe(
      "native",
    );
    expect(resolveServerConfig({}).ocrEngine).toBe("auto");
    expect((await loadServerConfig({ environment: { PIXPORT_OCR_ENGINE: "wasm" } })).ocrEngine).toBe("wasm");
    expect(() => resolveServerConfig({ encodeQuality: 0 })).toThrow(
      "encodeQuality must be at least 1, received 0",
    );
  });
});

describe("the embedded OCR's tuning", () => {
  it("takes the extractor's options from the file, the environment and flags, and names a bad one", async () => {
    expect(resolveServerConfig({}).ocr).toEqual({
      timeoutMs: 60_000,
      idleMs: 30_000,
      maxPagePixels: 16_000_000,
    });
    const config = await loadServerConfig({
      environment: {
        PIXPORT_OCR_WORKERS: "2",
        PIXPORT_OCR_MAX_PAGE_PIXELS: "8000000",
        PIXPORT_OCR_MAX_QUEUED: "3",
      },
      overrides: { ocr: { timeoutMs: 20_000 } },
    });
    expect(config.ocr).toEqual({
      workers: 2,
      maxQueued: 3,
      maxPagePixels: 8_000_000,
      timeoutMs: 20_000,
      idleMs: 30_000,
    });
    await expect(loadServerConfig({ environment: { PIXPORT_OCR_MAX_PAGE_PIXELS: "1000" } })).rejects.toThrow(
      "ocr.maxPagePixels must be at least 250000, received 1000",
    );
    // The engine has its own key; the extractor's other options are not the server's to set.
    expect(() => resolveServerConfig({ ocr: { engine: "wasm" } })).toThrow(/ocr/);
    expect(() => resolveServerConfig({ ocr: { langPath: "/tmp" } })).toThrow(/ocr/);
  });
});

describe("the web pages", () => {
  it("are on by default and turned off one by one from the environment or the file", async () => {
    expect(resolveServerConfig({}).pages).toEqual({ playground: true, docs: true });
    expect((await loadServerConfig({ environment: { PIXPORT_PLAYGROUND: "off" } })).pages).toEqual({
      playground: false,
      docs: true,
    });
    expect((await loadServerConfig({ environment: { PIXPORT_DOCS: "0" } })).pages).toEqual({
      playground: true,
      docs: false,
    });
    expect(resolveServerConfig({ pages: { docs: false } }).pages).toEqual({ playground: true, docs: false });
    expect(() => resolveServerConfig({ pages: { playgrond: false } })).toThrow(/playgrond/);
  });
});
