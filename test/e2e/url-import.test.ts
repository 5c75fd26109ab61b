import { blockedAddressReason, createNodeImageFetcher, type ResolvedAddress } from "@pixport/fetch-node";
import { dataPaths, type PixportServer, resolveServerConfig, startPixportServer } from "@pixport/server";
import { createFsBlobStore } from "@pixport/storage-fs";
import {
  type ConnectionSpy,
  createTestCertificates,
  installConnectionSpy,
  startTestHttpsServer,
  type TestHttpsServer,
} from "@pixport/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { call, halves, ID, IMAGE_KEYS, newKey, removeDir, solid, tempDataDir, upload } from "./harness.js";

/*
 * Create-from-URL end to end through the prebuilt server. The allowed origin is a real HTTPS server
 * on 127.0.0.1 with a certificate from a CA generated now; the server's fetcher is the production
 * one with the test resolver, the test CA, the test port, and a loopback exemption scoped to the
 * served host names. The connection spy refuses anything but loopback and records every connection.
 */

const SERVED = ["bucket.s3.amazonaws.com", "images.pixport-e2e.test", "pub-e2e.r2.dev"];
const served = new Set(SERVED);
const dns = new Map<string, ResolvedAddress[]>([
  ...SERVED.map((host) => [host, [{ address: "127.0.0.1", family: 4 }]] as [string, ResolvedAddress[]]),
  ["internal.r2.dev", [{ address: "10.0.0.5", family: 4 }]],
  ["metadata.r2.dev", [{ address: "::ffff:169.254.169.254", family: 6 }]],
]);
const lookups: string[] = [];

let spy: ConnectionSpy;
let origin: TestHttpsServer;
let server: PixportServer;
let dataDir: string;
let key: string;
let liveKey: string;
let png: Uint8Array;
let received: Record<string, string | string[] | undefined>[] = [];

function fetcherFor(port: number, ca: string) {
  return createNodeImageFetcher({
    resolve: async (hostname) => {
      lookups.push(hostname);
      const answers = dns.get(hostname);
      if (answers === undefined) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
      return answers;
    },
    ca,
    port,
    addressPolicy: (address, { hostname }) =>
      served.has(hostname) && address === "127.0.0.1" ? null : blockedAddressReason(address),
  });
}

beforeAll(async () => {
  spy = installConnectionSpy();
  png = await halves(64, 32, [255, 0, 0], [0, 0, 255]);
  const certificates = createTestCertificates(SERVED);
  origin = await startTestHttpsServer(certificates, (request, response) => {
    received.push(request.headers);
    const path = new URL(request.url ?? "/", "https://x").pathname;
    if (path === "/cat.png") {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.end(png);
    } else if (path === "/to-internal") {
      response.writeHead(302, { location: "https://internal.r2.dev/cat.png" });
      response.end();
    } else if (path === "/to-evil") {
      response.writeHead(301, { location: "https://evil.example/cat.png" });
      response.end();
    } else if (path === "/page") {
      response.writeHead(200, { "content-type": "image/png" });
      response.end("<html>not an image</html>");
    } else if (path === "/slow") {
      response.writeHead(200);
      response.write(png.subarray(0, 20));
      const timer = setInterval(() => response.write("x"), 100);
      response.on("close", () => clearInterval(timer));
    } else {
      response.writeHead(404);
      response.end("secret upstream body");
    }
  });
  dataDir = await tempDataDir();
  server = await startPixportServer(
    resolveServerConfig({
      port: 0,
      host: "127.0.0.1",
      dataDir,
      log: false,
      urlImport: { additionalOrigins: ["images.pixport-e2e.test"], timeoutMs: 1_500 },
      // This suite checks URL import, not the rate limits (test/e2e/policies.test.ts does).
      policies: { testRequestsPerMinute: 1_000_000, liveRequestsPerMinute: 1_000_000 },
    }),
    undefined,
    { imageFetcher: fetcherFor(origin.port, certificates.ca) },
  );
  key = await newKey(server, "test", "acme");
  liveKey = await newKey(server, "live", "acme");
});

afterAll(async () => {
  spy?.restore();
  await server?.close();
  await origin?.close();
  await removeDir(dataDir);
});

beforeEach(() => {
  spy.reset();
  lookups.length = 0;
  received = [];
});

const serverPort = () => Number(new URL(server.url).port);
/** Connections that went anywhere but the pixport server or the local origin. */
const stray = () =>
  spy.connections.filter(
    (connection) =>
      connection.address !== "127.0.0.1" || ![serverPort(), origin.port].includes(connection.port),
  );
const originConnections = () =>
  spy.connections.filter((connection) => connection.port === origin.port).length;

const create = (url: string, options: { key?: string; headers?: Record<string, string> } = {}) =>
  call(server.url, "POST", "/v1/images", {
    key: options.key ?? key,
    json: { name: "from-url", url },
    ...(options.headers === undefined ? {} : { headers: options.headers }),
  });

describe("create from an allowed origin", () => {
  it("imports an image from an allowed origin served over real TLS, re-encoded, billed as one image", async () => {
    const response = await create("https://bucket.s3.amazonaws.com/cat.png?X-Amz-Signature=abc", {
      key: liveKey,
      headers: { authorization: "Bearer inbound", cookie: "session=inbound" },
    });
    expect(response.status).toBe(201);
    expect(Object.keys(response.json)).toEqual(IMAGE_KEYS);
    expect(response.json).toMatchObject({
      name: "from-url",
      url: null,
      width: 64,
      height: 32,
      format: "png",
    });
    expect(response.json.id).toMatch(ID);
    expect(response.headers.get("x-image-processing-usage")).toBe("1");
    // B33: nothing of the inbound request reaches the origin.
    expect(received).toHaveLength(1);
    expect(Object.keys(received[0]!).sort()).toEqual([
      "accept",
      "accept-encoding",
      "connection",
      "host",
      "user-agent",
    ]);
    const download = await call(server.url, "GET", `/v1/images/${response.json.id}/download`, {
      key: liveKey,
    });
    expect(download.status).toBe(200);
    expect(stray()).toEqual([]);
  });

  it("accepts an origin added through urlImport.additionalOrigins", async () => {
    const response = await create("https://images.pixport-e2e.test/cat.png");
    expect(response.status).toBe(201);
    expect(response.json.width).toBe(64);
  });
});

describe("create from the service's own storage (no network request)", () => {
  it("resolves a published image URL of this server from the public store", async () => {
    const image = await upload(server.url, key, await solid(20, 10, [0, 200, 0]), "own");
    const published = await call(server.url, "POST", `/v1/images/${image.id}/publish`, { key });
    expect(published.status).toBe(201);
    spy.reset();
    for (const url of [published.json.url, published.json.url.replace(/\.png$/, "")]) {
      const response = await create(url);
      expect(response.status, url).toBe(201);
      expect(response.json).toMatchObject({ width: 20, height: 10, format: "png" });
      expect(response.json.id).not.toBe(image.id);
    }
    expect(lookups).toEqual([]);
    expect(originConnections()).toBe(0);
    expect(stray()).toEqual([]);
  });

  it("resolves https://storage.img-processing.com/og-image.jpg when the public store holds og-image.jpg", async () => {
    const missing = await create("https://storage.img-processing.com/og-image.jpg");
    expect(missing.status).toBe(422);
    expect(missing.json.errors).toEqual([
      "url must point to a published image of this service (nothing is published there)",
    ]);
    const publicStore = createFsBlobStore({ root: dataPaths(dataDir).publicBlobs });
    await publicStore.put("og-image.jpg", await solid(700, 320, [30, 60, 90], "jpeg"), {
      contentType: "image/jpeg",
    });
    const response = await create("https://storage.img-processing.com/og-image.jpg");
    expect(response.status).toBe(201);
    expect(response.json).toMatchObject({ width: 700, height: 320, format: "jpeg" });
    expect(lookups).toEqual([]);
    expect(spy.connections.every((connection) => connection.port === serverPort())).toBe(true);
  });
});

describe("refusals are 422s on url, never a 500 or a hang", () => {
  it.each([
    ["http://169.254.169.254/latest/meta-data/", "URL_NOT_ALLOWED", "url must be an https URL"],
    ["https://example.com/cat.png", "URL_NOT_ALLOWED", "url must be a URL from an allowed origin"],
    [
      "https://user:pw@bucket.s3.amazonaws.com/cat.png",
      "URL_NOT_ALLOWED",
      "url must not contain credentials (user name or password)",
    ],
    [
      "https://bucket.s3.amazonaws.com:8443/cat.png",
      "URL_NOT_ALLOWED",
      "url must use the default https port (443)",
    ],
    ["https://[::ffff:a9fe:a9fe]/", "URL_NOT_ALLOWED", "url must use a host name, not an IP address"],
    [
      "https://internal.r2.dev/cat.png",
      "SOURCE_UNREACHABLE",
      "url could not be reached (its host resolves to a non-public address)",
    ],
    [
      "https://metadata.r2.dev/cat.png",
      "SOURCE_UNREACHABLE",
      "url could not be reached (its host resolves to a non-public address)",
    ],
    [
      "https://nowhere.r2.dev/cat.png",
      "SOURCE_UNREACHABLE",
      "url could not be reached (its host name does not resolve)",
    ],
    [
      "https://pub-e2e.r2.dev/to-internal",
      "SOURCE_UNREACHABLE",
      "url could not be reached (its host resolves to a non-public address)",
    ],
    [
      "https://pub-e2e.r2.dev/to-evil",
      "URL_NOT_ALLOWED",
      "url was redirected to a host that is not allowed (evil.example)",
    ],
    [
      "https://pub-e2e.r2.dev/missing.png",
      "SOURCE_NOT_ACCESSIBLE",
      "url is not accessible (the source answered 404); it must be public or pre-signed",
    ],
    [
      "https://pub-e2e.r2.dev/page",
      "INVALID_IMAGE",
      "url must point to a jpeg, png or webp image (or avif, gif or tiff)",
    ],
    ["https://pub-e2e.r2.dev/slow", "SOURCE_TIMEOUT", "url did not answer within 1.5s"],
  ])("%s", async (url, code, message) => {
    const response = await create(url);
    expect(response.status).toBe(422);
    expect(response.json).toMatchObject({
      type: "https://docs.img-processing.com/errors/validation-error",
      error: "Validation Error",
      status: 422,
      code,
    });
    expect(response.json.errors).toEqual([message]);
    expect(JSON.stringify(response.json)).not.toMatch(/secret upstream body|10\.0\.0\.5|169\.254/);
    expect(stray()).toEqual([]);
  });
});

describe("configuration", () => {
  it("refuses every URL when urlImport.enabled is false, and bad host patterns at start", async () => {
    const otherDir = await tempDataDir();
    const disabled = await startPixportServer(
      resolveServerConfig({
        port: 0,
        host: "127.0.0.1",
        dataDir: otherDir,
        log: false,
        urlImport: { enabled: false },
      }),
    );
    try {
      const otherKey = await newKey(disabled, "test", "acme");
      const response = await call(disabled.url, "POST", "/v1/images", {
        key: otherKey,
        json: { name: "x", url: "https://bucket.s3.amazonaws.com/cat.png" },
      });
      expect(response.status).toBe(422);
      expect(response.json.errors).toEqual([
        "url cannot be imported: creating images from URLs is not enabled on this server",
      ]);
    } finally {
      await disabled.close();
      await removeDir(otherDir);
    }
    expect(() => resolveServerConfig({ urlImport: { additionalOrigins: ["*.com"] } })).toThrow(
      /urlImport\.additionalOrigins\.0/,
    );
    expect(() => resolveServerConfig({ urlImport: { unknown: 1 } })).toThrow(/urlImport/);
  });
});
