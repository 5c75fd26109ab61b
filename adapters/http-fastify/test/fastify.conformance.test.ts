import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createFetchDriver,
  createHttpBindingPipeline,
  describeHttpBindingConformance,
  type HttpBindingRequest,
  type HttpBindingResponse,
} from "@pixport/testing";
import Fastify, { type FastifyInstance } from "fastify";
import { expect, it } from "vitest";
import { fastifyPixport } from "../src/index.js";

/** An existing app with its own routes (and Fastify's default JSON parser) and pixport under /api. */
async function createApp(): Promise<{ app: FastifyInstance } & ReturnType<typeof createHttpBindingPipeline>> {
  const fixture = createHttpBindingPipeline({ codec: createSharpCodec() });
  const app = Fastify();
  app.get("/health", async () => ({ ok: true }));
  app.post("/echo", async (request) => request.body);
  await app.register(fastifyPixport, { prefix: "/api", pipeline: fixture.pipeline });
  return { app, ...fixture };
}

function injectDriver(app: FastifyInstance, prefix: string) {
  return async (request: HttpBindingRequest): Promise<HttpBindingResponse> => {
    const response = await app.inject({
      method: request.method as "GET",
      url: `${prefix}${request.path}`,
      headers: request.headers,
      payload: request.body === undefined ? undefined : Buffer.from(request.body),
    });
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
    }
    return { status: response.statusCode, headers, body: new Uint8Array(response.rawPayload) };
  };
}

let injected: FastifyInstance | undefined;
describeHttpBindingConformance({
  name: "fastify (inject, under /api)",
  setup: async () => {
    const { app, createKey, publicStorageBaseUrl, origin } = await createApp();
    injected = app;
    await app.ready();
    // light-my-request's default Host is localhost:80.
    return {
      send: injectDriver(app, "/api"),
      baseUrl: "http://localhost:80/api",
      createKey,
      publicStorageBaseUrl,
      origin,
    };
  },
  teardown: async () => {
    await injected?.close();
  },
  extraTests: () => {
    it("keeps the host app's own routes and JSON parser working next to the plugin", async () => {
      const app = injected as FastifyInstance;
      expect((await app.inject({ method: "GET", url: "/health" })).json()).toEqual({ ok: true });
      const echo = await app.inject({ method: "POST", url: "/echo", payload: { a: 1 } });
      expect(echo.json()).toEqual({ a: 1 });
      // Outside the prefix the host app's own 404 answers, not pixport's.
      const outside = await app.inject({ method: "GET", url: "/v1/images" });
      expect(outside.statusCode).toBe(404);
      expect(outside.json()).not.toHaveProperty("type");
    });

    it("registers the route table as native routes under the prefix", () => {
      const app = injected as FastifyInstance;
      expect(app.hasRoute({ method: "POST", url: "/api/v1/images/:image_id/resize" })).toBe(true);
      expect(app.hasRoute({ method: "GET", url: "/api/v1/openapi.json" })).toBe(true);
      expect(app.hasRoute({ method: "GET", url: "/api/*" })).toBe(true);
      expect(app.hasRoute({ method: "GET", url: "/v1/images" })).toBe(false);
    });
  },
});

let listening: FastifyInstance | undefined;
describeHttpBindingConformance({
  name: "fastify (socket, under /api)",
  setup: async () => {
    const { app, createKey, publicStorageBaseUrl, origin } = await createApp();
    listening = app;
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const baseUrl = `${address}/api`;
    return { send: createFetchDriver(baseUrl), baseUrl, createKey, publicStorageBaseUrl, origin };
  },
  teardown: async () => {
    await listening?.close();
  },
});
