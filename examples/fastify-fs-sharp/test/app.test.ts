import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Colors, halvesImage } from "@pixport/testing";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";

let app: FastifyInstance;
let dataDir: string;
let key: string;
let png: Uint8Array;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "pixport-example-fastify-"));
  const built = await createApp({ dataDir });
  app = built.app;
  key = await built.createKey("live", "smoke");
  png = await halvesImage(40, 20, Colors.red, Colors.blue);
});

afterAll(async () => {
  await app.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("example: fastify-fs-sharp", () => {
  it("serves its own routes, with Fastify's JSON parser, next to pixport", async () => {
    expect((await app.inject({ method: "GET", url: "/health" })).json()).toEqual({ status: "ok" });
    const echo = await app.inject({ method: "POST", url: "/echo", payload: { a: 1 } });
    expect(echo.json()).toEqual({ received: { a: 1 } });
  });

  it("uploads, lists and downloads under /pixport", async () => {
    const request = new Request("http://form.invalid/", {
      method: "POST",
      body: (() => {
        const form = new FormData();
        form.append("name", "smoke");
        form.append("image", new Blob([new Uint8Array(png)]), "blob");
        return form;
      })(),
    });
    const uploaded = await app.inject({
      method: "POST",
      url: "/pixport/v1/images/upload",
      headers: { "x-api-key": key, "content-type": request.headers.get("content-type") ?? "" },
      payload: Buffer.from(await request.arrayBuffer()),
    });
    expect(uploaded.statusCode).toBe(201);
    const image = uploaded.json() as { id: string };
    const list = await app.inject({
      method: "GET",
      url: "/pixport/v1/images",
      headers: { "x-api-key": key },
    });
    expect(list.json().data.map((item: { id: string }) => item.id)).toEqual([image.id]);
    const download = await app.inject({
      method: "GET",
      url: `/pixport/v1/images/${image.id}/download`,
      headers: { "x-api-key": key },
    });
    expect(download.headers["content-type"]).toBe("image/png");
    expect([...download.rawPayload.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    const openapi = await app.inject({ method: "GET", url: "/pixport/v1/openapi.json" });
    expect(openapi.json().info.version).toBe("1.0.0");
  });
});
