import { container, registerPixport, resolve, Tokens } from "@pixport/container";
import { type BlobStore, createApiKey, createMemoryBlobStore } from "@pixport/core";
import { createExpressRouter } from "@pixport/http-express";
import express, { type Express } from "express";

/** The app's own blob store: pixport's memory store plus a byte meter the app reports on. */
export function createMeteredBlobStore(): BlobStore & { storedBytes(): number } {
  const inner = createMemoryBlobStore();
  const sizes = new Map<string, number>();
  return {
    ...inner,
    async put(key, data, options) {
      await inner.put(key, data, options);
      sizes.set(key, data.byteLength);
    },
    async delete(key) {
      await inner.delete(key);
      sizes.delete(key);
    },
    storedBytes: () => [...sizes.values()].reduce((sum, size) => sum + size, 0),
  };
}

/**
 * pixport composed through the container: `registerPixport` registers every default (here: files
 * under `dataDir` for records and keys), and the app replaces one adapter, the private blob store,
 * before resolving the HTTP handler. Nothing else changes: the pipeline, the publisher and the
 * handler are built from whatever the tokens hold when they are first resolved.
 */
export async function createApp(options: { dataDir: string; publicStorageBaseUrl?: string }): Promise<{
  app: Express;
  store: ReturnType<typeof createMeteredBlobStore>;
  createKey: (kind: "test" | "live", accountId: string) => Promise<string>;
}> {
  const scope = container.createChildContainer();
  await registerPixport(scope, {
    storage: "fs",
    dataDir: options.dataDir,
    ...(options.publicStorageBaseUrl === undefined
      ? {}
      : { publicStorageBaseUrl: options.publicStorageBaseUrl }),
  });
  const store = createMeteredBlobStore();
  scope.register(Tokens.BlobStore, { useValue: store });

  const app = express();
  app.get("/storage", (_request, response) => {
    response.json({ storedBytes: store.storedBytes() });
  });
  app.use("/pixport", createExpressRouter(resolve(scope, Tokens.HttpHandler)));
  return {
    app,
    store,
    createKey: async (kind, accountId) =>
      (await createApiKey(resolve(scope, Tokens.KeyStore), { kind, accountId })).key,
  };
}
