import { createSharpCodec } from "@pixport/codec-sharp";
import { createPlaygroundSite } from "@pixport/playground";
import { createHttpBindingPipeline } from "@pixport/testing";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { fastifyPixport } from "../src/index.js";

describe("the playground pages on Fastify (the snippet of docs/library.md)", () => {
  it("serves / and /docs from site.respond next to the API plugin, which keeps its routes", async () => {
    const { pipeline, createKey } = createHttpBindingPipeline({ codec: createSharpCodec() });
    const site = createPlaygroundSite();
    const fastify = Fastify();
    await fastify.register(fastifyPixport, { pipeline });
    // The plugin owns `/` and the catch-all (its JSON 404), so the pages answer from a hook.
    fastify.addHook("onRequest", async (request, reply) => {
      const answer = site.respond({ method: request.method, url: request.url, headers: request.headers });
      if (answer !== undefined) {
        return reply.code(answer.status).headers(answer.headers).send(Buffer.from(answer.body));
      }
    });
    const page = await fastify.inject({ method: "GET", url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.body).toContain("pixport playground");
    const docs = await fastify.inject({ method: "GET", url: "/docs" });
    expect(docs.statusCode).toBe(200);
    const revalidated = await fastify.inject({
      method: "GET",
      url: "/docs",
      headers: { "if-none-match": String(docs.headers.etag) },
    });
    expect(revalidated.statusCode).toBe(304);
    const list = await fastify.inject({
      method: "GET",
      url: "/v1/images",
      headers: { "x-api-key": await createKey("live", "a") },
    });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toMatchObject({ data: [] });
    const missing = await fastify.inject({ method: "GET", url: "/nothing-here" });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: "ROUTE_NOT_FOUND" });
    await fastify.close();
  });
});
