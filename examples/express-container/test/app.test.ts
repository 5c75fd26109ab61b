import { once } from "node:events";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Colors, halvesImage } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.js";

let server: Server;
let base: string;
let dataDir: string;
let built: Awaited<ReturnType<typeof createApp>>;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "pixport-example-container-"));
  server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  built = await createApp({ dataDir });
  server.on("request", built.app);
});

afterAll(async () => {
  server.close();
  server.closeAllConnections();
  await rm(dataDir, { recursive: true, force: true });
});

describe("example: express-container", () => {
  it("stores image bytes in the store registered through the container, records on disk", async () => {
    const key = await built.createKey("live", "smoke");
    const form = new FormData();
    form.append("name", "smoke");
    form.append("image", new Blob([await halvesImage(40, 20, Colors.red, Colors.blue)]), "blob");
    const uploaded = await fetch(`${base}/pixport/v1/images/upload`, {
      method: "POST",
      headers: { "x-api-key": key },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const image = (await uploaded.json()) as { id: string; size: number };
    const stored = (await (await fetch(`${base}/storage`)).json()) as { storedBytes: number };
    expect(stored.storedBytes).toBe(image.size);
    // The default fs adapters still hold the record; no bytes went to the default blob directory.
    expect((await readdir(path.join(dataDir, "images"), { recursive: true })).join(" ")).toContain(image.id);
    const blobs = await readdir(path.join(dataDir, "blobs"), { recursive: true }).catch(() => []);
    expect(blobs.join(" ")).not.toContain(image.id);
    const download = await fetch(`${base}/pixport/v1/images/${image.id}/download`, {
      headers: { "x-api-key": key },
    });
    expect(download.status).toBe(200);
    expect((await download.arrayBuffer()).byteLength).toBe(image.size);
  });
});
