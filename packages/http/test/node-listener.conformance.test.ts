import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createFetchDriver,
  createHttpBindingPipeline,
  describeHttpBindingConformance,
} from "@pixport/testing";
import { createHttpHandler, createNodeListener } from "../src/index.js";

let server: Server | undefined;

// The bare node:http binding (what the prebuilt server uses for /v/...) passes the same HTTP
// contract suite as Express, Fastify and Lambda.
describeHttpBindingConformance({
  name: "node:http (createNodeListener, socket)",
  setup: async () => {
    const { pipeline, createKey, publicStorageBaseUrl, origin } = createHttpBindingPipeline({
      codec: createSharpCodec(),
    });
    server = createServer(createNodeListener(createHttpHandler(pipeline)));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { send: createFetchDriver(baseUrl), baseUrl, createKey, publicStorageBaseUrl, origin };
  },
  teardown: async () => {
    server?.close();
    server?.closeAllConnections();
    if (server !== undefined) await once(server, "close");
  },
});
