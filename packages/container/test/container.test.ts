import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BlobStore, createApiKey, createMemoryBlobStore } from "@pixport/core";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { registerPixport, resolve, container as rootContainer, Tokens } from "../src/index.js";

const png = () =>
  sharp({ create: { width: 40, height: 20, channels: 3, background: "#3366cc" } })
    .png()
    .toBuffer()
    .then((buffer) => new Uint8Array(buffer));

/** A BlobStore that records every key written through it. */
function recordingStore(): BlobStore & { written: string[] } {
  const inner = createMemoryBlobStore();
  const written: string[] = [];
  return {
    ...inner,
    written,
    async put(key, data, options) {
      written.push(key);
      return inner.put(key, data, options);
    },
  };
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("registerPixport", () => {
  it("resolves the whole graph with in-memory adapters and runs an upload and a resize", async () => {
    const container = await registerPixport(rootContainer.createChildContainer());
    const pipeline = resolve(container, Tokens.Pipeline);
    expect(resolve(container, Tokens.Pipeline)).toBe(pipeline);
    const { key } = await createApiKey(resolve(container, Tokens.KeyStore), { kind: "live", accountId: "a" });
    const caller = await pipeline.authenticate(key);
    const image = await pipeline.uploadImage(caller, { name: "blue", image: await png() });
    expect([image.width, image.height, image.format]).toEqual([40, 20, "png"]);
    const resized = await pipeline.resizeImage(caller, { imageId: image.id, body: { width: 10 } });
    expect([resized.width, resized.height]).toEqual([10, 5]);
    expect(resolve(container, Tokens.Codec).name).toMatch(/sharp/);
  });

  it("uses a BlobStore registered after it (the last registration wins)", async () => {
    const container = await registerPixport(rootContainer.createChildContainer());
    const store = recordingStore();
    container.register(Tokens.BlobStore, { useValue: store });
    const pipeline = resolve(container, Tokens.Pipeline);
    const { key } = await createApiKey(resolve(container, Tokens.KeyStore), { kind: "live", accountId: "a" });
    const image = await pipeline.uploadImage(await pipeline.authenticate(key), {
      name: "x",
      image: await png(),
    });
    expect(store.written).toEqual([expect.stringContaining(image.id)]);
  });

  it("keeps a BlobStore registered before it", async () => {
    const container = rootContainer.createChildContainer();
    const store = recordingStore();
    container.register(Tokens.BlobStore, { useValue: store });
    await registerPixport(container);
    expect(resolve(container, Tokens.BlobStore)).toBe(store);
  });

  it("builds the HTTP handler over the pipeline, with a registered option", async () => {
    const container = await registerPixport(rootContainer.createChildContainer());
    container.register(Tokens.HttpOptions, { useValue: { usageHeaderName: "X-Usage" } });
    const handler = resolve(container, Tokens.HttpHandler);
    const response = await handler({
      method: "GET",
      path: "/v1/images",
      query: new URLSearchParams(),
      headers: {},
      body: null,
      baseUrl: "http://localhost",
    } as Parameters<typeof handler>[0]);
    expect(response.status).toBe(401);
    expect(Object.keys(response.headers).map((name) => name.toLowerCase())).toContain("x-usage");
  });

  it("stores under the data directory with storage fs, and runs on jimp when asked", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "pixport-container-"));
    dirs.push(dataDir);
    const container = await registerPixport(rootContainer.createChildContainer(), {
      codec: "jimp",
      storage: "fs",
      dataDir,
    });
    expect(resolve(container, Tokens.Codec).name).toMatch(/jimp/);
    const pipeline = resolve(container, Tokens.Pipeline);
    const { key } = await createApiKey(resolve(container, Tokens.KeyStore), { kind: "live", accountId: "a" });
    const image = await pipeline.uploadImage(await pipeline.authenticate(key), {
      name: "x",
      image: await png(),
    });
    expect((await readdir(path.join(dataDir, "blobs"), { recursive: true })).join(" ")).toContain(image.id);
    await (resolve(container, Tokens.Codec) as { close?(): Promise<void> }).close?.();
  });

  it("refuses a bad config with a message naming the field", async () => {
    await expect(
      registerPixport(rootContainer.createChildContainer(), { codec: "vips" as never }),
    ).rejects.toThrow(/codec/);
  });
});
