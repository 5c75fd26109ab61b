import path from "node:path";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createBlobStorePublisher,
  createImagePipeline,
  generateApiKey,
  generateKeyId,
  hashApiKey,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import { createExpressRouter } from "@pixport/http-express";
import { createFsBlobStore, createFsImageRepository, createFsKeyStore } from "@pixport/storage-fs";
import express, { type Express } from "express";

/**
 * The host application: its own routes (a health check and a small JSON API with its own body
 * parser) and pixport mounted under `/pixport`. Everything pixport needs is built by hand.
 */
export function createApp(options: { dataDir: string; publicBaseUrl?: string }): {
  app: Express;
  createKey: (kind: "test" | "live", accountId: string) => Promise<string>;
} {
  const blobStore = createFsBlobStore({ root: path.join(options.dataDir, "blobs") });
  const publicStore = createFsBlobStore({ root: path.join(options.dataDir, "public") });
  const keys = createFsKeyStore({ root: path.join(options.dataDir, "keys") });
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: createFsImageRepository({ root: path.join(options.dataDir, "images") }),
    keys,
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: publicStore,
      // The app serves the public copies itself below, under /media.
      publicBaseUrl: `${options.publicBaseUrl ?? "http://localhost:3000"}/media`,
    }),
  });

  const app = express();
  const notes: string[] = [];
  app.get("/health", (_request, response) => {
    response.json({ status: "ok" });
  });
  // The app's own JSON parser is scoped to its own API, not installed in front of pixport.
  app.post("/notes", express.json(), (request, response) => {
    notes.push(String(request.body?.text ?? ""));
    response.status(201).json({ count: notes.length });
  });
  app.use("/media", express.static(path.join(options.dataDir, "public"), { immutable: true, maxAge: "1y" }));
  app.use("/pixport", createExpressRouter(createHttpHandler(pipeline)));

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
