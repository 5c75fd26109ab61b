import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import { createHttpHandler } from "@pixport/http";
import {
  createFetchDriver,
  createHttpBindingPipeline,
  describeHttpBindingConformance,
} from "@pixport/testing";
import express from "express";
import { createExpressRouter } from "../src/index.js";

let server: Server | undefined;

describeHttpBindingConformance({
  name: "express (socket, under /api)",
  setup: async () => {
    const { pipeline, createKey, publicStorageBaseUrl, origin } = createHttpBindingPipeline({
      codec: createSharpCodec(),
    });
    const app = express();
    app.get("/health", (_request, response) => {
      response.json({ ok: true });
    });
    app.use("/api", createExpressRouter(createHttpHandler(pipeline)));
    server = app.listen(0, "127.0.0.1");
    await once(server, "listening");
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    return { send: createFetchDriver(baseUrl), baseUrl, createKey, publicStorageBaseUrl, origin };
  },
  teardown: async () => {
    server?.close();
    server?.closeAllConnections();
    if (server !== undefined) await once(server, "close");
  },
});
