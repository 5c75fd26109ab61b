import { createSharpCodec } from "@pixport/codec-sharp";
import type { BackgroundRemover } from "@pixport/core";
import { createHttpBindingPipeline, waitUntil } from "@pixport/testing";
import Fastify from "fastify";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { fastifyPixport } from "../src/index.js";

// Over a real socket: when the client goes away, the request's signal reaches the port doing the
// work (here a background remover that waits for it).
const seen: AbortSignal[] = [];
const waitingRemover: BackgroundRemover = {
  name: "waits-for-abort",
  remove: (_request, options = {}) =>
    new Promise((_resolve, reject) => {
      const { signal } = options;
      if (signal === undefined) return reject(new Error("no signal reached the remover"));
      seen.push(signal);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
};
const app = Fastify();

afterAll(async () => {
  // Drop the idle keep-alive connections of fetch instead of waiting for their timeout.
  app.server.closeAllConnections();
  await app.close();
});

describe("fastifyPixport and a client that goes away", () => {
  it("aborts the signal of the work in progress and logs a closed request, not an error", async () => {
    const subject = createHttpBindingPipeline({
      codec: createSharpCodec(),
      deps: { backgroundRemover: waitingRemover },
    });
    const key = await subject.createKey("live", "a");
    const logged: Array<[string, string]> = [];
    const logger = {
      info: (message: string) => logged.push(["info", message]),
      error: (message: string) => logged.push(["error", message]),
    };
    await app.register(fastifyPixport, { pipeline: subject.pipeline, handlerOptions: { logger } });
    const base = await app.listen({ port: 0, host: "127.0.0.1" });
    const png = await sharp({ create: { width: 20, height: 10, channels: 3, background: "#123456" } })
      .png()
      .toBuffer();
    const form = new FormData();
    form.append("name", "x");
    form.append("image", new Blob([new Uint8Array(png)]), "x.png");
    const uploaded = await fetch(`${base}/v1/images`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const { id } = (await uploaded.json()) as { id: string };
    const client = new AbortController();
    const pending = fetch(`${base}/v1/images/${id}/remove-background`, {
      method: "POST",
      headers: { "x-api-key": key },
      signal: client.signal,
    }).catch((error: unknown) => error);
    await waitUntil(() => seen.length === 1, "the request reaches the remover");
    expect(seen[0]?.aborted).toBe(false);
    client.abort();
    expect(await pending).toBeInstanceOf(Error);
    await waitUntil(() => seen[0]?.aborted === true, "the remover sees the abort");
    expect((seen[0]?.reason as Error | undefined)?.name).toBe("AbortError");
    // Logged as a closed request, not as a failure of the server.
    await waitUntil(() => logged.length > 0, "the handler logs the closed request");
    expect(logged).toEqual([["info", "client closed the request"]]);
  });
});
