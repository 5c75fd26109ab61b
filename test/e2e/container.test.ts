import * as nodeFs from "node:fs/promises";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { container, resolve, Tokens } from "@pixport/container";
import { type BlobStore, createMemoryBlobStore } from "@pixport/core";
import { type PixportServer, resolveServerConfig, startPixportServer } from "@pixport/server";
import { createFsBlobStore, type FsPromises } from "@pixport/storage-fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, halves, newKey, removeDir, tempDataDir, uploadForm } from "./harness.js";

async function start(dataDir: string, scope = container.createChildContainer()): Promise<PixportServer> {
  return startPixportServer(
    resolveServerConfig({ port: 0, host: "127.0.0.1", dataDir, log: false }),
    undefined,
    { container: scope },
  );
}

describe("the prebuilt server composed through @pixport/container", () => {
  let dataDir: string;
  let server: PixportServer;
  const written: string[] = [];
  let store: BlobStore;
  beforeAll(async () => {
    dataDir = await tempDataDir();
    const inner = createMemoryBlobStore();
    store = {
      ...inner,
      async put(key, data, options) {
        written.push(key);
        await inner.put(key, data, options);
      },
    };
    const scope = container.createChildContainer();
    scope.register(Tokens.BlobStore, { useValue: store });
    server = await start(dataDir, scope);
  });
  afterAll(async () => {
    await server?.close();
    await removeDir(dataDir);
  });

  it("uses the BlobStore registered in the container for uploads, transforms and publishing", async () => {
    const key = await newKey(server, "live", "container");
    const uploaded = await call(server.url, "POST", "/v1/images/upload", {
      key,
      form: uploadForm("c", await halves(20, 10, [255, 0, 0], [0, 0, 255])),
    });
    expect(uploaded.status).toBe(201);
    const mirrored = await call(server.url, "POST", `/v1/images/${uploaded.json.id}/mirror`, {
      key,
      json: { mode: "horizontal" },
    });
    expect(mirrored.status).toBe(201);
    expect(written).toEqual([
      expect.stringContaining(uploaded.json.id),
      expect.stringContaining(mirrored.json.id),
    ]);
    // Publishing copies from the replaced store: the public copy is served.
    const published = await call(server.url, "POST", `/v1/images/${mirrored.json.id}/publish`, { key });
    expect(published.status).toBe(201);
    expect((await fetch(`${server.url}${new URL(published.json.url).pathname}`)).status).toBe(200);
    // Nothing went to the default blob directory.
    const blobs = await readdir(path.join(dataDir, "blobs"), { recursive: true }).catch(() => [] as string[]);
    expect(blobs.join(" ")).not.toContain(uploaded.json.id);
    expect(resolve(server.container, Tokens.BlobStore)).toBe(store);
  });
});

describe("a full disk (real ENOSPC from /dev/full)", () => {
  let dataDir: string;
  let server: PixportServer;
  beforeAll(async () => {
    dataDir = await tempDataDir();
    // Temp files of the blob store are opened on /dev/full, where every write fails with ENOSPC.
    const fullDisk: FsPromises = {
      ...nodeFs,
      open: ((file: string, flags?: string, mode?: number) =>
        flags === "wx" && String(file).endsWith("~tmp")
          ? nodeFs.open("/dev/full", "w")
          : nodeFs.open(file, flags, mode)) as FsPromises["open"],
    };
    const scope = container.createChildContainer();
    scope.register(Tokens.BlobStore, {
      useValue: createFsBlobStore({ root: path.join(dataDir, "blobs"), fs: fullDisk }),
    });
    server = await start(dataDir, scope);
  });
  afterAll(async () => {
    await server?.close();
    await removeDir(dataDir);
  });

  it("answers 503 with Retry-After and a message that names no errno, and stores and bills nothing", async () => {
    const key = await newKey(server, "live", "full", { trial: true });
    const response = await call(server.url, "POST", "/v1/images/upload", {
      key,
      form: uploadForm("f", await halves(8, 8, [0, 0, 0], [255, 255, 255])),
    });
    expect(response.status).toBe(503);
    expect(response.json).toMatchObject({
      type: "https://docs.img-processing.com/errors/internal-error",
      error: "Internal Error",
      status: 503,
      code: "STORAGE_UNAVAILABLE",
    });
    expect(response.json.message).not.toMatch(/ENOSPC|dev\/full|disk/i);
    expect(Number(response.headers.get("retry-after"))).toBe(30);
    expect((await call(server.url, "GET", "/v1/images", { key })).json.data).toEqual([]);
    expect((await server.pipeline.usage("full")).images).toBe(0);
  });
});

function _currentPeriod(): string {
  return new Date().toISOString().slice(0, 7);
}
