import { Writable } from "node:stream";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  generateApiKey,
  hashApiKey,
  isImagePipelineError,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createHttpBindingPipeline } from "@pixport/testing";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { fastifyPixport } from "../src/index.js";

/** A pipeline whose image repository fails on `list` with an unexpected error. */
async function failingPipeline() {
  const keys = createMemoryKeyStore();
  const key = generateApiKey("live");
  await keys.insert({
    id: "key_f",
    hash: await hashApiKey(key),
    displayPrefix: "live_f",
    kind: "live",
    accountId: "a",
    createdAt: new Date().toISOString(),
  });
  const images = createMemoryImageRepository();
  const blobStore = createMemoryBlobStore();
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: {
      ...images,
      list: () => Promise.reject(new Error("disk on fire")),
    },
    keys,
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: createMemoryBlobStore(),
      publicBaseUrl: "https://cdn.test",
    }),
  });
  return { pipeline, key };
}

describe("fastifyPixport", () => {
  it("logs unexpected errors through Fastify's own logger and answers a generic 500", async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const { pipeline, key } = await failingPipeline();
    const app = Fastify({ logger: { level: "error", stream } });
    await app.register(fastifyPixport, { prefix: "/p", pipeline });
    const response = await app.inject({ method: "GET", url: "/p/v1/images", headers: { "x-api-key": key } });
    expect(response.statusCode).toBe(500);
    expect(response.json().message).not.toContain("disk on fire");
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === "unexpected error");
    expect(logged).toBeDefined();
    expect(logged.error).toContain("disk on fire");
    expect(logged.level).toBe(50);
    await app.close();
  });

  it("prefers an explicit handlerOptions.logger", async () => {
    const errors: string[] = [];
    const { pipeline, key } = await failingPipeline();
    const app = Fastify();
    await app.register(fastifyPixport, {
      pipeline,
      handlerOptions: { logger: { error: (message) => errors.push(message) } },
    });
    const response = await app.inject({ method: "GET", url: "/v1/images", headers: { "x-api-key": key } });
    expect(response.statusCode).toBe(500);
    expect(errors).toEqual(["unexpected error"]);
    await app.close();
  });

  it("needs exactly one of pipeline or handler", async () => {
    const app = Fastify();
    await expect(app.register(fastifyPixport, {}).ready()).rejects.toSatisfy(
      (error: unknown) => isImagePipelineError(error) && error.code === "INVALID_CONFIGURATION",
    );
    const { pipeline } = createHttpBindingPipeline({ codec: createSharpCodec() });
    const both = Fastify();
    await expect(
      both.register(fastifyPixport, { pipeline, handler: createHttpHandler(pipeline) }).ready(),
    ).rejects.toThrow(/pipeline: give exactly one of pipeline or handler/);
    // A wrong type is named too; Fastify's own register options (prefix) pass through.
    const wrong = Fastify();
    await expect(
      wrong.register(fastifyPixport, { prefix: "/api", handler: "not a function" as never }).ready(),
    ).rejects.toThrow(/handler: must be a handler from createHttpHandler/);
  });

  it("accepts a ready handler and builds links on nested prefixes and trusted forwarded headers", async () => {
    const { pipeline, createKey } = createHttpBindingPipeline({ codec: createSharpCodec() });
    const key = await createKey("live", "nested");
    const app = Fastify({ trustProxy: true });
    await app.register(
      async (outer) => {
        await outer.register(fastifyPixport, { prefix: "/inner", handler: createHttpHandler(pipeline) });
      },
      { prefix: "/outer" },
    );
    const response = await app.inject({
      method: "GET",
      url: "/outer/inner/v1/openapi.json",
      headers: { "x-forwarded-proto": "https", "x-forwarded-host": "media.example.com" },
    });
    expect(response.json().servers).toEqual([{ url: "https://media.example.com/outer/inner" }]);
    const list = await app.inject({
      method: "GET",
      url: "/outer/inner/v1/images?take=1",
      headers: { "x-api-key": key },
    });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({ data: [], links: { previous: null, next: null } });
    await app.close();
  });
});
