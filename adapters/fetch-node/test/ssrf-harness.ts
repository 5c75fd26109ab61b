import type { AddressInfo } from "node:net";
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";
import { gzipSync } from "node:zlib";
import { type ImageFetcher, type ImageFetchRequest, isImagePipelineError } from "@pixport/core";
import { createUrlImportPolicy } from "@pixport/core/internal";
import {
  type ConnectionSpy,
  createTestCertificates,
  installConnectionSpy,
  startTestHttpsServer,
  type TestHttpsServer,
} from "@pixport/testing";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { blockedAddressReason, createNodeImageFetcher, type ResolvedAddress } from "../src/index.js";

/*
 * Every test here talks to real HTTPS servers on 127.0.0.1 through the production fetcher. The
 * test resolver maps allow-listed host names to loopback, the test CA is generated now, and the
 * address policy exempts 127.0.0.1 only for the host names this file serves; every other address,
 * including 127.0.0.1 for any other name, goes through the default classifier. The connection spy
 * sits below net/tls and refuses any non-loopback destination, so nothing here can leave the host.
 */

export const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
const MAX_BYTES = 2 * 1024 * 1024;

// Host names served by the test server (all on the allow-list or a provider's redirect list).
const SERVED = [
  "bucket.s3.amazonaws.com",
  "bucket.s3.eu-west-1.amazonaws.com",
  "storage.googleapis.com",
  "acct.blob.core.windows.net",
  "pub-1.r2.dev",
  "rebind.r2.dev",
  "www.dropbox.com",
  "uc1a2b.dl.dropboxusercontent.com",
  "drive.google.com",
  "drive.usercontent.google.com",
  "api.onedrive.com",
  "public.bn.files.1drv.com",
];
const servedHosts = new Set(SERVED);

export let spy: ConnectionSpy;
export let server: TestHttpsServer;
export let untrusted: TestHttpsServer;
export let wrongName: TestHttpsServer;
let hangServer: TcpServer;
export let hangPort: number;
const hangSockets = new Set<Socket>();
export let lastHeaders: Record<string, string | string[] | undefined> = {};
export const dns = new Map<string, ResolvedAddress[] | ((call: number) => ResolvedAddress[])>();
export const lookups = new Map<string, number>();

export const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
export const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

async function resolve(hostname: string): Promise<readonly ResolvedAddress[]> {
  const call = (lookups.get(hostname) ?? 0) + 1;
  lookups.set(hostname, call);
  const entry = dns.get(hostname);
  if (entry === undefined) {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  }
  return typeof entry === "function" ? entry(call) : entry;
}

export function makeFetcher(port: number, ca?: string): ImageFetcher {
  return createNodeImageFetcher({
    resolve,
    ...(ca === undefined ? {} : { ca }),
    port,
    // The loopback exemption is scoped to this file's host names; everything else is production.
    addressPolicy: (address, { hostname }) =>
      servedHosts.has(hostname) && address === "127.0.0.1" ? null : blockedAddressReason(address),
  });
}

export let fetcher: ImageFetcher;
const policy = createUrlImportPolicy();

export const limits = { maxRedirects: 3, maxBytes: MAX_BYTES, connectTimeoutMs: 2_000, timeoutMs: 5_000 };

/** The operation's path without the codec: policy, then the fetcher with the policy's redirect check. */
export async function importUrl(url: string, overrides: Partial<ImageFetchRequest> = {}, using = fetcher) {
  const decision = policy.resolve(url);
  if (!decision.ok) throw Object.assign(new Error(decision.message), { code: decision.code });
  if (decision.source.kind !== "remote") throw new Error("unexpected own-storage URL");
  const source = decision.source;
  return using.fetch({
    url: source.url,
    checkRedirect: (location, from) => policy.checkRedirect(source, location, from),
    ...limits,
    ...overrides,
  });
}

export async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const code = isImagePipelineError(error) ? error.code : String((error as { code?: unknown }).code);
    return { code, message: (error as Error).message };
  }
  throw new Error("expected a refusal, but the fetch succeeded");
}

export const served = (path: string, host = "storage.googleapis.com") => `https://${host}${path}`;
export const redirectTo = (target: string, host = "storage.googleapis.com") =>
  served(`/redirect?to=${encodeURIComponent(target)}`, host);

export let trusted: string;
const gzipBomb = gzipSync(Buffer.concat([PNG, Buffer.alloc(64 * 1024 * 1024)]), { level: 9 });

/** Starts this suite's loopback servers and connection spy around the calling test file. */
export function useSsrfServers(): void {
  beforeAll(async () => {
    spy = installConnectionSpy();
    const certificates = createTestCertificates(SERVED);
    server = await startTestHttpsServer(certificates, (request, response) => {
      const url = new URL(request.url ?? "/", "https://placeholder");
      lastHeaders = request.headers;
      const path = url.pathname;
      if (path === "/s/redirecting/cat.png") {
        response.writeHead(302, { location: "https://uc1a2b.dl.dropboxusercontent.com/ok.png" });
        response.end();
      } else if (path === "/s/offlist/cat.png") {
        response.writeHead(302, { location: "https://storage.googleapis.com/ok.png" });
        response.end();
      } else if (
        path === "/ok.png" ||
        path.startsWith("/s/") ||
        path === "/uc" ||
        path.includes("/root/content")
      ) {
        response.writeHead(200, { "content-type": "image/png", "content-length": PNG.length });
        response.end(PNG);
      } else if (path === "/png-as-html") {
        response.writeHead(200, { "content-type": "text/html" });
        response.end(PNG);
      } else if (path === "/redirect") {
        response.writeHead(302, { location: url.searchParams.get("to") ?? "" });
        response.end();
      } else if (path.startsWith("/chain/")) {
        const step = Number(path.slice(7));
        if (step >= Number(url.searchParams.get("until") ?? Number.POSITIVE_INFINITY)) {
          response.end(PNG);
          return;
        }
        response.writeHead(302, { location: `/chain/${step + 1}${url.search}` });
        response.end();
      } else if (path === "/no-location") {
        response.writeHead(302);
        response.end();
      } else if (path.startsWith("/status/")) {
        response.writeHead(Number(path.slice(8)), { "content-type": "text/plain" });
        response.end("upstream body that must not be echoed");
      } else if (path === "/html") {
        response.writeHead(200, { "content-type": "text/html" });
        response.end("<!doctype html><title>Virus scan warning</title>");
      } else if (path === "/svg") {
        response.writeHead(200, { "content-type": "image/png" });
        response.end('<svg xmlns="http://www.w3.org/2000/svg"/>');
      } else if (path === "/lying-length") {
        // Declares 1000 bytes, then streams far more (B23): the cap counts real bytes.
        response.writeHead(200, { "content-type": "image/png", "content-length": "1000" });
        response.write(PNG);
        const chunk = Buffer.alloc(64 * 1024);
        const pump = () => {
          while (response.write(chunk)) {
            if (response.destroyed) return;
          }
          response.once("drain", pump);
        };
        pump();
      } else if (path === "/declared-too-large") {
        response.writeHead(200, { "content-type": "image/png", "content-length": String(MAX_BYTES + 1) });
        response.write(PNG);
      } else if (path === "/infinite") {
        response.writeHead(200, { "content-type": "image/png" });
        response.write(PNG);
        const chunk = Buffer.alloc(64 * 1024);
        const pump = () => {
          while (!response.destroyed && response.write(chunk)) {}
          if (!response.destroyed) response.once("drain", pump);
        };
        pump();
      } else if (path === "/gzip-bomb") {
        response.writeHead(200, { "content-type": "image/png", "content-encoding": "gzip" });
        response.end(gzipBomb);
      } else if (path === "/gzip-small") {
        response.writeHead(200, { "content-type": "image/png", "content-encoding": "gzip" });
        response.end(gzipSync(PNG));
      } else if (path === "/compress") {
        response.writeHead(200, { "content-type": "image/png", "content-encoding": "compress" });
        response.end(PNG);
      } else if (path === "/slow") {
        response.writeHead(200, { "content-type": "image/png" });
        response.write(PNG.subarray(0, 16));
        const timer = setInterval(() => response.write(Buffer.from([0])), 100);
        response.on("close", () => clearInterval(timer));
      } else if (path === "/slow-headers") {
        const timer = setTimeout(() => response.end(), 60_000);
        response.on("close", () => clearTimeout(timer));
      } else if (path === "/header-bomb") {
        const headers: Record<string, string> = {};
        for (let index = 0; index < 64; index++) headers[`x-filler-${index}`] = "a".repeat(1024);
        response.writeHead(200, headers);
        response.end(PNG);
      } else if (path === "/truncated") {
        response.writeHead(200, { "content-type": "image/png", "content-length": "100000" });
        response.write(PNG);
        setTimeout(() => response.socket?.destroy(), 20);
      } else {
        response.writeHead(404);
        response.end();
      }
    });
    untrusted = await startTestHttpsServer(
      createTestCertificates(SERVED, { ca: false }),
      (_request, response) => {
        response.end(PNG);
      },
    );
    wrongName = await startTestHttpsServer(
      createTestCertificates(["other.example.net"]),
      (_request, response) => {
        response.end(PNG);
      },
    );
    hangServer = createTcpServer((socket) => {
      hangSockets.add(socket);
      socket.on("close", () => hangSockets.delete(socket));
    });
    await new Promise<void>((done) => hangServer.listen(0, "127.0.0.1", done));
    hangPort = (hangServer.address() as AddressInfo).port;
    for (const host of SERVED) dns.set(host, [v4("127.0.0.1")]);
    fetcher = makeFetcher(server.port, certificates.ca);
    trusted = certificates.ca;
  });

  afterAll(async () => {
    spy?.restore();
    for (const socket of hangSockets) socket.destroy();
    await Promise.all([server?.close(), untrusted?.close(), wrongName?.close()]);
    await new Promise<void>((done) => (hangServer ? hangServer.close(() => done()) : done()));
  });

  beforeEach(() => {
    spy.reset();
    lookups.clear();
  });
}

/** Connections the spy saw that did not go to one of this file's loopback servers. */
export const strayConnections = () =>
  spy.connections.filter(
    (connection) =>
      connection.address !== "127.0.0.1" ||
      ![server.port, untrusted.port, wrongName.port, hangPort].includes(connection.port),
  );

/** One SSRF vector: how to run it, the refusal code expected and the connections it may open. */
export interface Vector {
  name: string;
  run: () => Promise<unknown>;
  code: string | RegExp;
  /** Connections allowed to the served test server (redirect and body vectors). */
  serverConnections?: number;
}
