import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type BlobStore, createMemoryBlobStore, ErrorCodes, ImagePipelineError } from "@pixport/core";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { createLifecycle } from "../src/lifecycle.js";
import { mountPublicFiles } from "../src/public-files.js";

// The 503s the prebuilt server answers outside the handler (while starting, and a published file
// the store cannot read) come from the same code table as the handler's: their own code, a
// message for clients, the contract's 5xx type and title, and Retry-After.

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("503 answers of the prebuilt server", () => {
  it("answers STARTING while the handler is being built, without reading the body", async () => {
    const lifecycle = createLifecycle();
    const base = await listen(createServer(lifecycle.gate));
    const answer = await fetch(`${base}/v1/images/upload`, {
      method: "POST",
      headers: { "x-api-key": `live_${"a".repeat(32)}`, "content-type": "application/json" },
      body: '{"name":"x"}',
    });
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("1");
    expect(await answer.json()).toEqual({
      type: "https://docs.img-processing.com/errors/internal-error",
      error: "Internal Error",
      status: 503,
      message: "The server is starting; retry in a moment.",
      code: ErrorCodes.STARTING,
    });
    // Liveness says it is alive meanwhile.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("answers STORAGE_UNAVAILABLE when a published file cannot be read, the cause kept in the log", async () => {
    const memory = createMemoryBlobStore();
    const broken: BlobStore = {
      ...memory,
      stat: async () => {
        throw new ImagePipelineError(ErrorCodes.STORAGE_UNAVAILABLE, "EIO reading /srv/data/public/x.png");
      },
    };
    const logged: string[] = [];
    const app = express();
    mountPublicFiles(app, broken, { error: (message, fields) => logged.push(`${message} ${fields?.error}`) });
    const base = await listen(createServer(app));
    const answer = await fetch(`${base}/images/image_${"a".repeat(24)}.png`);
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("5");
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    const text = await answer.text();
    expect(JSON.parse(text)).toEqual({
      type: "https://docs.img-processing.com/errors/internal-error",
      error: "Internal Error",
      status: 503,
      message: "Storage is temporarily unavailable; retry later.",
      code: ErrorCodes.STORAGE_UNAVAILABLE,
    });
    expect(text).not.toContain("/srv/data");
    expect(logged.join("\n")).toContain("EIO reading /srv/data/public/x.png");
  });
});
