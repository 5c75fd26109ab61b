import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createNodeListener, type HttpHandler, type HttpRequest } from "../src/index.js";

async function serve(handler: HttpHandler) {
  const server = createServer(createNodeListener(handler));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe("createNodeListener", () => {
  it("hands the handler the method, path, query, headers, streamed body and base URL, and writes its answer", async () => {
    const seen: HttpRequest[] = [];
    const { server, base } = await serve(async (request) => {
      seen.push(request);
      const chunks: Uint8Array[] = [];
      for await (const chunk of request.body as AsyncIterable<Uint8Array>) chunks.push(chunk);
      return {
        status: 201,
        headers: { "Content-Type": "text/plain", "X-Echo": request.query.get("q") ?? "" },
        body: Buffer.concat(chunks),
      };
    });
    try {
      const response = await fetch(`${base}/v1/things?q=1`, {
        method: "POST",
        body: "hello",
        headers: { "x-a": "b" },
      });
      expect(response.status).toBe(201);
      expect(response.headers.get("x-echo")).toBe("1");
      expect(await response.text()).toBe("hello");
      expect(seen[0]).toMatchObject({
        method: "POST",
        path: "/v1/things",
        baseUrl: base,
        headers: { "x-a": "b" },
      });
      expect(seen[0]!.signal).toBeInstanceOf(AbortSignal);
    } finally {
      server.close();
    }
  });

  it("answers HEAD without a body, and a handler's unexpected rejection with the contract's 500", async () => {
    const { server, base } = await serve(async (request) => {
      if (request.method === "HEAD")
        return { status: 200, headers: { "Content-Length": "5" }, body: new TextEncoder().encode("hello") };
      throw new Error("bug");
    });
    try {
      const head = await fetch(`${base}/x`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe("");
      const failed = await fetch(`${base}/x`);
      expect(failed.status).toBe(500);
      expect(await failed.json()).toMatchObject({ status: 500, code: "INTERNAL", error: "Internal Error" });
    } finally {
      server.close();
    }
  });

  it("aborts the handler's signal when the client goes away", async () => {
    let aborted: Promise<unknown> | undefined;
    let signal: AbortSignal | undefined;
    const { server, base } = await serve(
      (request) =>
        new Promise((resolve) => {
          signal = request.signal;
          aborted = once(request.signal!, "abort");
          aborted.then(() => resolve({ status: 200, headers: {}, body: null }));
        }),
    );
    try {
      const client = new AbortController();
      const pending = fetch(`${base}/slow`, { signal: client.signal }).catch(() => null);
      await expect.poll(() => aborted !== undefined).toBe(true);
      client.abort();
      await pending;
      await aborted;
      expect(signal?.aborted).toBe(true);
      expect(signal?.reason).toMatchObject({ name: "AbortError" });
    } finally {
      server.close();
    }
  });
});
