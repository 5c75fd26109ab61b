/**
 * The server's API end to end through `@pixport/client`: every route over real sockets, with the
 * client's types and its typed errors. (The other e2e suites use plain `fetch`.)
 */
import { createReadStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { createPixportClient, PixportApiError, type PixportClient, type ResponseInfo } from "@pixport/client";
import type { PixportServer } from "@pixport/server";
import {
  chatCompletion,
  imagesResponse,
  type OpenAiCompatibleServer,
  startOpenAiCompatibleServer,
} from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decode,
  ID,
  IMAGE_KEYS,
  isClose,
  newKey,
  pixel,
  removeDir,
  solid,
  startServer,
  tempDataDir,
} from "./harness.js";

let provider: OpenAiCompatibleServer;
let server: PixportServer;
let dataDir: string;
let client: PixportClient;
let seen: ResponseInfo[];

const bytesOf = async (blob: Blob) => new Uint8Array(await blob.arrayBuffer());

beforeAll(async () => {
  provider = await startOpenAiCompatibleServer();
  dataDir = await tempDataDir();
  const entry = (model: string) => ({ baseUrl: provider.baseUrl, model, apiKey: "sk-loopback" });
  server = await startServer(dataDir, {
    models: {
      registry: {
        "uform-gen": entry("uform-gen"),
        sdxl: entry("sdxl-lightning"),
        vision: entry("gemini-2.5-flash"),
      },
      defaults: { classify: "vision", extract: "vision" },
      timeoutMs: 5_000,
    },
  });
  seen = [];
  client = createPixportClient({
    baseUrl: `${server.url}/`,
    apiKey: await newKey(server, "live", "client"),
    onResponse: (info) => seen.push(info),
  });
});

afterAll(async () => {
  await server?.close();
  await provider?.close();
  await removeDir(dataDir);
});

describe("uploads", () => {
  it("takes a Uint8Array, a Blob, a File, a Node stream and a web ReadableStream", async () => {
    const png = await solid(40, 30, [200, 10, 10]);
    const file = path.join(dataDir, "upload.png");
    await writeFile(file, png);
    const sources = [
      png,
      new Blob([png], { type: "image/png" }),
      new File([png], "red.png", { type: "image/png" }),
      createReadStream(file),
      new Blob([png]).stream(),
    ];
    for (const [index, image] of sources.entries()) {
      const stored = await client.images.upload({ name: `source-${index}`, image });
      expect(Object.keys(stored)).toEqual(IMAGE_KEYS);
      expect(stored).toMatchObject({ name: `source-${index}`, width: 40, height: 30, format: "png" });
      expect(stored.id).toMatch(ID);
    }
    // The usage header of each billed call reached the hook.
    expect(seen.filter((info) => info.url.endsWith("/v1/images/upload")).map((info) => info.usage)).toEqual([
      1, 1, 1, 1, 1,
    ]);
  });

  it("a non-image upload is a typed 422 naming the field", async () => {
    const error = await client.images
      .upload({ name: "text", image: new TextEncoder().encode("not an image") })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PixportApiError);
    expect(error).toMatchObject({ status: 422, code: "INVALID_IMAGE", title: "Validation Error" });
    expect((error as PixportApiError).errors?.some((each) => each.startsWith("image "))).toBe(true);
  });
});

describe("listing", () => {
  it("pages through every image with the async iterators, newest first", async () => {
    const first = await client.images.list({ take: 100 });
    expect(first.links.next).toBeNull();
    const ids = first.data.map((image) => image.id);
    expect(ids.length).toBeGreaterThanOrEqual(5);
    const pages: string[][] = [];
    for await (const page of client.images.pages({ take: 2 })) pages.push(page.data.map((image) => image.id));
    expect(pages.length).toBe(Math.ceil(ids.length / 2));
    expect(pages.flat()).toEqual(ids);
    const all: string[] = [];
    for await (const image of client.images.all({ take: 3 })) all.push(image.id);
    expect(all).toEqual(ids);
  });
});

describe("every image route", () => {
  let id: string;
  beforeAll(async () => {
    const quadrant = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#2040c0" } })
      .png()
      .toBuffer();
    id = (await client.images.upload({ name: "blue", image: quadrant })).id;
  });

  it("get, metadata and download", async () => {
    expect(await client.images.get(id)).toMatchObject({ id, width: 64, height: 48, url: null });
    const facts = await client.images.metadata(id);
    expect(facts).toMatchObject({ id, width: 64, height: 48, has_alpha: false, frames: 1 });
    const blob = await client.images.download(id);
    expect(blob.type).toBe("image/png");
    expect((await sharp(await bytesOf(blob)).metadata()).width).toBe(64);
  });

  it("the thirteen operations, each with its exact body and result", async () => {
    const ops = client.images;
    expect(await ops.mirror(id, { mode: "horizontal" })).toMatchObject({ width: 64, height: 48 });
    expect(await ops.convert(id, { format: "webp", quality: 80 })).toMatchObject({ format: "webp" });
    const boxed = await ops.resize(id, {
      width: 200,
      height: 100,
      fit: "contain",
      letterbox_color: "#ff0000",
    });
    expect(boxed).toMatchObject({ width: 200, height: 100 });
    // The letterbox colour the SDK drops reaches the server: the bars are red.
    expect(
      isClose(pixel(await decode(await bytesOf(await ops.download(boxed.id))), 2, 50), [255, 0, 0]),
    ).toBe(true);
    expect(
      await ops.transform(id, {
        steps: [
          { op: "resize", width: 32 },
          { op: "rotate", angle: 90 },
        ],
      }),
    ).toMatchObject({ width: 24, height: 32 });
    expect(await ops.crop(id, { x1: 0, y1: 0, x2: 10, y2: 20 })).toMatchObject({ width: 10, height: 20 });
    expect(await ops.rotate(id, { angle: 90 })).toMatchObject({ width: 48, height: 64 });
    expect(await ops.modulate(id, { brightness: 1.2 })).toMatchObject({ width: 64 });
    expect(await ops.blur(id, { sigma: 2 })).toMatchObject({ width: 64 });
    expect(await ops.removeBackground(id, {})).toMatchObject({ format: "png" });
    const logo = await client.images.upload({ name: "logo", image: await solid(8, 8, [255, 255, 0]) });
    expect(await ops.watermark(id, { watermarks: [{ id: logo.id, left: 4, top: 4 }] })).toMatchObject({
      width: 64,
    });
    provider.enqueue({ json: chatCompletion("A blue square.") });
    expect(await ops.visualize(id, { prompt: "What is this?" })).toEqual({ response: "A blue square." });
    const classification = {
      main_label: "Square",
      main_score: 0.6,
      secondary_labels: [
        { label: "Tile", score: 0.2 },
        { label: "Flag", score: 0.1 },
        { label: "Sky", score: 0.05 },
        { label: "Sea", score: 0.05 },
      ],
    };
    provider.enqueue({ json: chatCompletion(JSON.stringify(classification)) });
    expect(await ops.classify(id, {})).toEqual(classification);
    provider.enqueue({ json: chatCompletion("| a | b |\n| --- | --- |") });
    expect(await ops.extractFormattedText(id, { format: "markdown" })).toEqual({
      format: "markdown",
      content: "| a | b |\n| --- | --- |",
    });
    provider.enqueue({ json: imagesResponse(await solid(64, 64, [0, 200, 0])) });
    expect(await client.images.imagine({ name: "green", prompt: "a green field" })).toMatchObject({
      name: "green",
      format: "jpeg",
    });
  });

  it("publish, import from the public URL, a signed variant, unpublish and delete", async () => {
    const published = await client.images.publish(id);
    expect(published.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect((await fetch(published.url!)).status).toBe(200);
    const imported = await client.images.createFromUrl({ name: "copy", url: published.url! });
    expect(imported).toMatchObject({ name: "copy", width: 64, height: 48 });
    const signed = await client.images.signedUrl(id, { modifiers: "w_32", format: "png", expires_in: 60 });
    const [signature, imageId, variant] = new URL(signed.url).pathname.split("/").slice(2);
    const blob = await client.variant({ signature: signature!, imageId: imageId!, variant: variant! });
    expect((await sharp(await bytesOf(blob)).metadata()).width).toBe(32);
    expect((await client.images.unpublish(id)).url).toBeNull();
    await client.images.delete(id);
    const gone = await client.images.get(id).catch((caught: unknown) => caught);
    expect(gone).toBeInstanceOf(PixportApiError);
    expect(gone).toMatchObject({ status: 404, code: "IMAGE_NOT_FOUND", title: "Not Found" });
    expect((gone as PixportApiError).message).toMatch(/not found/i);
  });

  it("the OpenAPI document and openapi-fetch's raw client share the base URL and key", async () => {
    const document = await client.openapi();
    expect(Object.keys(document.paths as object)).toContain("/v1/images/{image_id}/transform");
    const { data, response } = await client.raw.GET("/v1/images", { params: { query: { take: 1 } } });
    expect(response.status).toBe(200);
    expect(data?.data).toHaveLength(1);
  });
});

describe("errors", () => {
  it("a 422 carries every failing field; a 401 its message", async () => {
    const invalid = await client.images
      .resize("image_aaaaaaaaaaaaaaaaaaaaaaaa", { width: 0, height: 20_000 })
      .catch((caught: unknown) => caught);
    expect(invalid).toBeInstanceOf(PixportApiError);
    const error = invalid as PixportApiError;
    expect(error.status).toBe(422);
    expect(error.type).toMatch(/^https:\/\//);
    expect(error.errors).toEqual(expect.arrayContaining([expect.stringMatching(/^width /)]));
    expect(error.errors).toEqual(expect.arrayContaining([expect.stringMatching(/^height /)]));
    const anonymous = createPixportClient({ baseUrl: server.url, apiKey: "live_nope" });
    await expect(anonymous.images.list()).rejects.toMatchObject({ status: 401, code: expect.any(String) });
  });

  it("a 429 carries Retry-After and the rate-limit headers", async () => {
    const limitedDir = await tempDataDir();
    const limited = await startServer(limitedDir, {
      policies: { testRequestsPerMinute: 2, liveRequestsPerMinute: 2 },
    });
    try {
      const slow = createPixportClient({
        baseUrl: limited.url,
        apiKey: await newKey(limited, "test", "slow"),
      });
      await slow.images.list();
      await slow.images.list();
      const refused = await slow.images.list().catch((caught: unknown) => caught);
      expect(refused).toBeInstanceOf(PixportApiError);
      expect(refused).toMatchObject({ status: 429, rateLimit: { limit: 2, remaining: 0 } });
      expect((refused as PixportApiError).retryAfter).toBeGreaterThan(0);
    } finally {
      await limited.close();
      await removeDir(limitedDir);
    }
  });
});
