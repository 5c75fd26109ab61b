import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import {
  Colors,
  createTestCertificates,
  describeOriginSourceConformance,
  solidImage,
  startTestHttpsServer,
  type TestHttpsServer,
} from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockedAddressReason, createHttpOriginSource } from "../src/index.js";

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

/** A loopback origin: files by decoded path with ETag and Last-Modified, and extra routes. */
async function startOrigin(routes: Record<string, Handler> = {}) {
  const files = new Map<string, { data: Uint8Array; modified: Date }>();
  const seen: IncomingMessage[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(request);
    const path = decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname);
    const route = routes[path];
    if (route !== undefined) return route(request, response);
    const file = files.get(path);
    if (file === undefined) return response.writeHead(404).end();
    const etag = `"${createHash("sha256").update(file.data).digest("hex").slice(0, 16)}"`;
    if (request.headers["if-none-match"] === etag) return response.writeHead(304, { ETag: etag }).end();
    response.writeHead(200, {
      "Content-Type": "image/png",
      "Content-Length": file.data.byteLength,
      ETag: etag,
      "Last-Modified": file.modified.toUTCString(),
    });
    response.end(file.data);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    files,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describeOriginSourceConformance({
  name: "http",
  create: async () => {
    const origin = await startOrigin();
    return {
      source: createHttpOriginSource({ baseUrl: `${origin.base}/media/`, allowPrivateNetwork: true }),
      put: async (path, data) => {
        origin.files.set(`/media/${path}`, { data, modified: new Date() });
      },
      close: origin.close,
    };
  },
});

const codeOf = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return isImagePipelineError(error) ? error.code : String(error);
};

describe("http origin", () => {
  let origin: Awaited<ReturnType<typeof startOrigin>>;
  let png: Uint8Array;
  beforeAll(async () => {
    png = await solidImage(4, 4, Colors.red, "png");
    origin = await startOrigin({
      "/moved.png": (_request, response) => response.writeHead(302, { Location: "/media/a.png" }).end(),
      "/away.png": (_request, response) =>
        response.writeHead(302, { Location: "http://localhost.example/a.png" }).end(),
      "/page.png": (_request, response) =>
        response.writeHead(200, { "Content-Type": "text/html" }).end("<html>"),
      "/broken.png": (_request, response) => response.writeHead(503).end(),
      "/private.png": (request, response) =>
        request.headers.authorization === "Bearer s3cret"
          ? response.writeHead(200, { "Content-Type": "image/png" }).end(png)
          : response.writeHead(403).end(),
      "/slow.png": (_request, response) => {
        response.writeHead(200, { "Content-Type": "image/png" });
        response.write(png.subarray(0, 16));
      },
    });
    origin.files.set("/media/a.png", { data: png, modified: new Date() });
  });
  afterAll(() => origin.close());

  const source = (extra: object = {}) =>
    createHttpOriginSource({ baseUrl: `${origin.base}/`, allowPrivateNetwork: true, ...extra });

  it("refuses a loopback origin unless the private network is allowed, before any request", async () => {
    const before = origin.seen.length;
    const refused = createHttpOriginSource({ baseUrl: `${origin.base}/` });
    expect(await codeOf(refused.get({ segments: ["media", "a.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(origin.seen.length).toBe(before);
  });

  it("follows a redirect on the origin and refuses one off its host", async () => {
    const moved = await source().get({ segments: ["moved.png"], maxBytes: 1e6 });
    expect(moved.status === "found" && [...moved.data]).toEqual([...png]);
    expect(await codeOf(source().get({ segments: ["away.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(await codeOf(source({ maxRedirects: 0 }).get({ segments: ["moved.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
  });

  it("refuses a declared type off the list, an error status, and sends the configured headers", async () => {
    expect(await codeOf(source().get({ segments: ["page.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(await codeOf(source().get({ segments: ["broken.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(await codeOf(source().get({ segments: ["private.png"], maxBytes: 1e6 }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    const authorized = await source({ headers: { Authorization: "Bearer s3cret" } }).get({
      segments: ["private.png"],
      maxBytes: 1e6,
    });
    expect(authorized.status).toBe("found");
  });

  it("stops a slow body when the request's signal aborts", async () => {
    const controller = new AbortController();
    const reason = new Error("deadline");
    setTimeout(() => controller.abort(reason), 200);
    const error = await source()
      .get({ segments: ["slow.png"], maxBytes: 1e6, signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect(error).toBe(reason);
  });
});

describe("https origin on a host name", () => {
  // The test resolver maps the origin's names to loopback; the server's certificate (test CA) is for
  // cms.test only.
  const addresses: Record<string, string[]> = {
    "cms.test": ["127.0.0.1"],
    "other.test": ["127.0.0.1"],
    "mixed.test": ["127.0.0.1", "10.0.0.7"],
  };
  const resolve = async (hostname: string) => {
    const found = addresses[hostname];
    if (found === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: 4 }));
  };
  const certificates = createTestCertificates(["cms.test", "mixed.test"]);
  let server: TestHttpsServer;
  let png: Uint8Array;
  beforeAll(async () => {
    png = await solidImage(4, 4, Colors.blue, "png");
    server = await startTestHttpsServer(certificates, (_request, response) =>
      response.writeHead(200, { "Content-Type": "image/png" }).end(png),
    );
  });
  afterAll(() => server.close());

  const get = (host: string, extra: object = {}) =>
    createHttpOriginSource({ baseUrl: `https://${host}:${server.port}/`, resolve, ...extra }).get({
      segments: ["a.png"],
      maxBytes: 1e6,
    });

  it("connects to the checked address, with the certificate checked on the host name", async () => {
    const found = await get("cms.test", { ca: certificates.ca, allowPrivateNetwork: true });
    expect(found.status === "found" && [...found.data]).toEqual([...png]);
    const before = server.connections;
    // A certificate for another name, and an unknown CA, are refused on the connection.
    expect(await codeOf(get("other.test", { ca: certificates.ca, allowPrivateNetwork: true }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(await codeOf(get("cms.test", { allowPrivateNetwork: true }))).toBe(ErrorCodes.ORIGIN_ERROR);
    expect(server.connections).toBe(before + 2);
  });

  it("refuses a name with a refused answer before connecting, even when its first answer passes", async () => {
    const before = server.connections;
    expect(await codeOf(get("cms.test", { ca: certificates.ca }))).toBe(ErrorCodes.ORIGIN_ERROR);
    // 127.0.0.1 passes this policy and is the answer connected to; the private one refuses the host.
    const loopbackOnly = (address: string) =>
      address === "127.0.0.1" ? null : blockedAddressReason(address);
    expect(await codeOf(get("mixed.test", { ca: certificates.ca, addressPolicy: loopbackOnly }))).toBe(
      ErrorCodes.ORIGIN_ERROR,
    );
    expect(server.connections).toBe(before);
  });
});
