// Diagnostic variant of pixport-child.mjs: the same core, sharp codec, HTTP handler and Express
// binding, but in-memory storage, so a run shows what the HTTP layer costs apart from the disk.
// Run: BENCH_PIXPORT_SCRIPT=pixport-memory-child.mjs node bench/resize-throughput.mjs
// (NO_EXPRESS=1 also drops Express and calls the neutral handler from node:http directly).
import { createServer } from "node:http";
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
import { createExpressRouter } from "@pixport/http-express";
import express from "express";
import { reportPeakRss } from "./lib.mjs";

reportPeakRss();
const blobStore = createMemoryBlobStore();
const keys = createMemoryKeyStore();
const key = generateApiKey("live");
await keys.insert({
  id: "key_b",
  hash: await hashApiKey(key),
  displayPrefix: "x",
  kind: "live",
  accountId: "b",
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
    publicBaseUrl: "http://x",
  }),
});
const handler = createHttpHandler(pipeline);
const app = express();
app.use(createExpressRouter(handler));
const server = createServer(
  process.env.NO_EXPRESS
    ? async (req, res) => {
        const url = new URL(req.url, "http://x");
        const r = await handler({
          method: req.method,
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body: req,
          baseUrl: "http://x",
        });
        res.writeHead(r.status, r.headers);
        res.end(r.body);
      }
    : app,
);
server.listen(0, "127.0.0.1", () => {
  console.log(`KEY ${key}`);
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
process.on("SIGTERM", () => process.exit(0));
