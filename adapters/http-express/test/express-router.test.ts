import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  generateApiKey,
  hashApiKey,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import express from "express";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExpressRouter } from "../src/index.js";

let server: Server;
let base: string;
let key: string;

beforeAll(async () => {
  const blobStore = createMemoryBlobStore();
  const keys = createMemoryKeyStore();
  key = generateApiKey("live");
  await keys.insert({
    id: "key_e",
    hash: await hashApiKey(key),
    displayPrefix: "live_e",
    kind: "live",
    accountId: "a",
    createdAt: new Date().toISOString(),
  });
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: createMemoryImageRepository(),
    keys,
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: createMemoryBlobStore(),
      publicBaseUrl: "https://cdn.test",
    }),
  });
  // An existing app with its own routes and a global JSON body parser installed before pixport.
  const app = express();
  app.use(express.json());
  app.get("/health", (_request, response) => {
    response.json({ ok: true });
  });
  app.post("/echo", (request, response) => {
    response.json(request.body);
  });
  app.use("/media/api", createExpressRouter(createHttpHandler(pipeline)));
  server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.close();
  await once(server, "close");
});

describe("createExpressRouter inside an existing app", () => {
  it("serves the app's own routes next to pixport", async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ ok: true });
    const echo = await fetch(`${base}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"a":1}',
    });
    expect(await echo.json()).toEqual({ a: 1 });
  });

  it("uploads and transforms under the prefix, after the host app's JSON parser consumed the body", async () => {
    const png = await sharp({ create: { width: 40, height: 20, channels: 3, background: "red" } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("name", "prefixed");
    form.append("image", new Blob([png]), "blob");
    const uploaded = await fetch(`${base}/media/api/v1/images/upload`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const image = (await uploaded.json()) as { id: string };
    const resized = await fetch(`${base}/media/api/v1/images/${image.id}/resize`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ width: 10 }),
    });
    expect(resized.status).toBe(201);
    expect(await resized.json()).toMatchObject({ width: 10, height: 5, name: "prefixed" });
    expect(resized.headers.get("x-image-processing-usage")).toBe("1");
  });

  it("builds list links on the mount URL", async () => {
    const list = await fetch(`${base}/media/api/v1/images?take=1`, { headers: { "x-api-key": key } });
    const body = (await list.json()) as { data: unknown[]; links: { next: string } };
    expect(body.data).toHaveLength(1);
    expect(body.links.next).toMatch(
      new RegExp(`^${base}/media/api/v1/images\\?take=1&from=image_[a-z0-9]{24}$`),
    );
    const next = await fetch(body.links.next, { headers: { "x-api-key": key } });
    expect(((await next.json()) as { data: unknown[] }).data).toHaveLength(1);
  });

  it("answers unknown pixport paths under the prefix with a JSON 404", async () => {
    const response = await fetch(`${base}/media/api/v1/unknown`, { headers: { "x-api-key": key } });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { status: number }).status).toBe(404);
  });
});
