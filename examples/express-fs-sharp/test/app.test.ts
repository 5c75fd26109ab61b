import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Colors, halvesImage } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";

let server: Server;
let base: string;
let dataDir: string;
let key: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "pixport-example-express-"));
  server = (await import("node:http")).createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const built = createApp({ dataDir, publicBaseUrl: base });
  server.on("request", built.app);
  key = await built.createKey("live", "smoke");
});

afterAll(async () => {
  server.close();
  server.closeAllConnections();
  await rm(dataDir, { recursive: true, force: true });
});

describe("example: express-fs-sharp", () => {
  it("serves its own routes next to pixport", async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ status: "ok" });
    const note = await fetch(`${base}/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "hello" }),
    });
    expect(note.status).toBe(201);
  });

  it("uploads, resizes, publishes and serves the public copy under its prefixes", async () => {
    const form = new FormData();
    form.append("name", "smoke");
    form.append("image", new Blob([await halvesImage(40, 20, Colors.red, Colors.blue)]), "blob");
    const uploaded = await fetch(`${base}/pixport/v1/images/upload`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const image = (await uploaded.json()) as { id: string };
    const resized = await fetch(`${base}/pixport/v1/images/${image.id}/resize`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ width: 10 }),
    });
    expect(await resized.json()).toMatchObject({ width: 10, height: 5 });
    const published = await fetch(`${base}/pixport/v1/images/${image.id}/publish`, {
      method: "POST",
      headers: { "x-api-key": key },
    });
    const { url } = (await published.json()) as { url: string };
    expect(url).toBe(`${base}/media/images/${image.id}.png`);
    const publicCopy = await fetch(url);
    expect(publicCopy.status).toBe(200);
    expect(publicCopy.headers.get("content-type")).toBe("image/png");
    const openapi = await fetch(`${base}/pixport/v1/openapi.json`);
    expect(((await openapi.json()) as { servers: unknown }).servers).toEqual([{ url: `${base}/pixport` }]);
  });
});
