import path from "node:path";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createBlobStorePublisher,
  createImagePipeline,
  generateApiKey,
  generateKeyId,
  hashApiKey,
} from "@pixport/core";
import { fastifyPixport } from "@pixport/http-fastify";
import { createFsBlobStore, createFsImageRepository, createFsKeyStore } from "@pixport/storage-fs";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";

/**
 * The host application: its own routes (a health check and a JSON route using Fastify's default
 * parser) and pixport registered as an encapsulated plugin under `/pixport`. pixport's errors go to
 * the app's logger.
 */
export async function createApp(options: {
  dataDir: string;
  publicStorageBaseUrl?: string;
  fastify?: FastifyServerOptions;
}): Promise<{
  app: FastifyInstance;
  createKey: (kind: "test" | "live", accountId: string) => Promise<string>;
}> {
  const blobStore = createFsBlobStore({ root: path.join(options.dataDir, "blobs") });
  const keys = createFsKeyStore({ root: path.join(options.dataDir, "keys") });
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: createFsImageRepository({ root: path.join(options.dataDir, "images") }),
    keys,
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: createFsBlobStore({ root: path.join(options.dataDir, "public") }),
      // Point a CDN or static server at `${dataDir}/public`.
      publicBaseUrl: options.publicStorageBaseUrl ?? "https://cdn.example.com",
    }),
  });

  const app = Fastify(options.fastify);
  app.get("/health", async () => ({ status: "ok" }));
  app.post("/echo", async (request) => ({ received: request.body }));
  await app.register(fastifyPixport, { prefix: "/pixport", pipeline });

  return {
    app,
    async createKey(kind, accountId) {
      const key = generateApiKey(kind);
      await keys.insert({
        id: generateKeyId(),
        hash: await hashApiKey(key),
        displayPrefix: key.slice(0, 9),
        kind,
        accountId,
        createdAt: new Date().toISOString(),
      });
      return key;
    },
  };
}
