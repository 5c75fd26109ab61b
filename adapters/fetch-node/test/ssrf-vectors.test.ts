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
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { blockedAddressReason, createNodeImageFetcher, type ResolvedAddress } from "../src/index.js";

/*
 * Every test here talks to real HTTPS servers on 127.0.0.1 through the production fetcher. The
 * test resolver maps allow-listed host names to loopback, the test CA is generated now, and the
 * address policy exempts 127.0.0.1 only for the host names this file serves; every other address,
 * including 127.0.0.1 for any other name, goes through the default classifier. The connection spy
 * sits below net/tls and refuses any non-loopback destination, so nothing here can leave the host.
 */

const PNG = Buffer.from(
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

let spy: ConnectionSpy;
let server: TestHttpsServer;
let untrusted: TestHttpsServer;
let wrongName: TestHttpsServer;
let hangServer: TcpServer;
let hangPort: number;
const hangSockets = new Set<Socket>();
let lastHeaders: Record<string, string | string[] | undefined> = {};
const dns = new Map<string, ResolvedAddress[] | ((call: number) => ResolvedAddress[])>();
const lookups = new Map<string, number>();

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

async function resolve(hostname: string): Promise<readonly ResolvedAddress[]> {
  const call = (lookups.get(hostname) ?? 0) + 1;
  lookups.set(hostname, call);
  const entry = dns.get(hostname);
  if (entry === undefined) {
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  }
  return typeof entry === "function" ? entry(call) : entry;
}

function makeFetcher(port: number, ca?: string): ImageFetcher {
  return createNodeImageFetcher({
    resolve,
    ...(ca === undefined ? {} : { ca }),
    port,
    // The loopback exemption is scoped to this file's host names; everything else is production.
    addressPolicy: (address, { hostname }) =>
      servedHosts.has(hostname) && address === "127.0.0.1" ? null : blockedAddressReason(address),
  });
}

let fetcher: ImageFetcher;
const policy = createUrlImportPolicy();

const limits = { maxRedirects: 3, maxBytes: MAX_BYTES, connectTimeoutMs: 2_000, timeoutMs: 5_000 };

/** The operation's path without the codec: policy, then the fetcher with the policy's redirect check. */
async function importUrl(url: string, overrides: Partial<ImageFetchRequest> = {}, using = fetcher) {
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

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const code = isImagePipelineError(error) ? error.code : String((error as { code?: unknown }).code);
    return { code, message: (error as Error).message };
  }
  throw new Error("expected a refusal, but the fetch succeeded");
}

const served = (path: string, host = "storage.googleapis.com") => `https://${host}${path}`;
const redirectTo = (target: string, host = "storage.googleapis.com") =>
  served(`/redirect?to=${encodeURIComponent(target)}`, host);

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

let trusted: string;
const gzipBomb = gzipSync(Buffer.concat([PNG, Buffer.alloc(64 * 1024 * 1024)]), { level: 9 });

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

/** Connections the spy saw that did not go to one of this file's loopback servers. */
const strayConnections = () =>
  spy.connections.filter(
    (connection) =>
      connection.address !== "127.0.0.1" ||
      ![server.port, untrusted.port, wrongName.port, hangPort].includes(connection.port),
  );

describe("safe cases are accepted over real TLS", () => {
  it.each([
    ["S3 virtual host", served("/ok.png", "bucket.s3.amazonaws.com")],
    ["S3 regional virtual host", served("/ok.png", "bucket.s3.eu-west-1.amazonaws.com")],
    ["GCS, upper case and trailing dot", "https://STORAGE.googleapis.com./ok.png"],
    ["Azure blob", served("/ok.png?sv=1&sig=x", "acct.blob.core.windows.net")],
    ["R2", served("/ok.png", "pub-1.r2.dev")],
    ["content type ignored, bytes sniffed", served("/png-as-html")],
    ["unsolicited gzip decoded under the cap", served("/gzip-small")],
    ["redirect within the allow-list", redirectTo("https://pub-1.r2.dev/ok.png")],
    ["relative redirect", redirectTo("/ok.png")],
    ["three redirects (the maximum)", served("/chain/0?until=3")],
  ])("%s", async (_name, url) => {
    const result = await importUrl(url);
    expect(Buffer.from(result.data).equals(PNG)).toBe(true);
    expect(strayConnections()).toEqual([]);
  });

  it("fetches a Dropbox share link as dl=1 and follows it to the provider's content host only", async () => {
    const shared = await importUrl("https://www.dropbox.com/s/abc123/cat.png?dl=0");
    expect(Buffer.from(shared.data).equals(PNG)).toBe(true);
    expect(shared.url).toBe("https://www.dropbox.com/s/abc123/cat.png?dl=1");
    const redirected = await importUrl("https://www.dropbox.com/s/redirecting/cat.png");
    expect(redirected.url).toBe("https://uc1a2b.dl.dropboxusercontent.com/ok.png");
    // storage.googleapis.com is an allowed origin, but not one of Dropbox's download hosts.
    const offList = await refusal(importUrl("https://www.dropbox.com/s/offlist/cat.png"));
    expect(offList).toEqual({
      code: "URL_NOT_ALLOWED",
      message: "was redirected to a host that is not allowed (storage.googleapis.com)",
    });
  });

  it("fetches Google Drive and OneDrive share links through their download endpoints", async () => {
    const drive = await importUrl("https://drive.google.com/file/d/1AbCdEfGhIjKlMnOp/view?usp=sharing");
    expect(drive.url).toBe("https://drive.google.com/uc?export=download&id=1AbCdEfGhIjKlMnOp");
    const onedrive = await importUrl("https://1drv.ms/i/s!AkLpk-abc");
    expect(onedrive.url).toMatch(/^https:\/\/api\.onedrive\.com\/v1\.0\/shares\/u!.+\/root\/content$/);
  });

  it("sends only its own headers (B33) and no Accept-Encoding but identity", async () => {
    await importUrl(served("/ok.png"));
    expect(Object.keys(lastHeaders).sort()).toEqual([
      "accept",
      "accept-encoding",
      "connection",
      "host",
      "user-agent",
    ]);
    expect(lastHeaders.host).toBe("storage.googleapis.com");
    expect(lastHeaders["accept-encoding"]).toBe("identity");
  });

  it("ignores HTTP(S)_PROXY (B37): the proxy sees no connection", async () => {
    let proxied = 0;
    const proxy = createTcpServer((socket) => {
      proxied += 1;
      socket.destroy();
    });
    await new Promise<void>((done) => proxy.listen(0, "127.0.0.1", done));
    const port = (proxy.address() as AddressInfo).port;
    const saved = { https: process.env.HTTPS_PROXY, http: process.env.HTTP_PROXY };
    process.env.HTTPS_PROXY = `http://127.0.0.1:${port}`;
    process.env.HTTP_PROXY = `http://127.0.0.1:${port}`;
    try {
      const result = await importUrl(served("/ok.png"));
      expect(result.data.byteLength).toBe(PNG.length);
      expect(proxied).toBe(0);
    } finally {
      process.env.HTTPS_PROXY = saved.https;
      process.env.HTTP_PROXY = saved.http;
      if (saved.https === undefined) delete process.env.HTTPS_PROXY;
      if (saved.http === undefined) delete process.env.HTTP_PROXY;
      await new Promise<void>((done) => proxy.close(() => done()));
    }
  });

  it("pins the first validated answer: a later DNS answer (rebinding, B16) is never used", async () => {
    dns.set("rebind.r2.dev", (call) => (call === 1 ? [v4("127.0.0.1")] : [v4("169.254.169.254")]));
    const result = await importUrl(served("/ok.png", "rebind.r2.dev"));
    expect(result.data.byteLength).toBe(PNG.length);
    expect(lookups.get("rebind.r2.dev")).toBe(1);
    expect(spy.connections).toEqual([{ address: "127.0.0.1", port: server.port }]);
    dns.set("rebind.r2.dev", [v4("127.0.0.1")]);
  });
});

// ---------------------------------------------------------------------------------------------
// The vector table. Each entry must be refused with the expected code and must open no TCP
// connection except, where noted, to the loopback test server of a served (allowed) host.
// ---------------------------------------------------------------------------------------------

interface Vector {
  name: string;
  run: () => Promise<unknown>;
  code: string | RegExp;
  /** Connections allowed to the served test server (redirect and body vectors). */
  serverConnections?: number;
}

const policyVectors: Vector[] = [
  // B1, B2, B5: scheme and numeric hosts (the URL parser normalises them; policy refuses)
  "http://169.254.169.254/latest/meta-data/",
  "https://169.254.169.254/latest/meta-data/",
  "https://2130706433/",
  "https://0x7f.1/",
  "https://0x7f000001/",
  "https://0177.0.0.1/",
  "https://0177.0000.0000.0001/",
  "https://127.1/",
  "https://127.0.1/",
  "https://012.0.0.1/",
  "https://10.0.0.1/",
  "https://0/",
  "https://0.0.0.0/",
  "https://169.254.169.254./",
  "https://[::1]/",
  "https://[::]/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::ffff:a9fe:a9fe]/",
  "https://[64:ff9b::a9fe:a9fe]/",
  "https://[2002:a9fe:a9fe::]/",
  "https://[fe80::1%25eth0]/",
  "https://[0:0:0:0:0:ffff:7f00:1]/",
  "http://bucket.s3.us-east-1.amazonaws.com/x.png",
  // B4, B22-style schemes
  "file:///etc/passwd",
  "gopher://storage.googleapis.com:70/_x",
  "data:image/png;base64,iVBORw0KGgo=",
  "ftp://storage.googleapis.com/x.png",
  "blob:https://storage.googleapis.com/uuid",
  "javascript:alert(1)",
  "ws://storage.googleapis.com/x",
  "dict://127.0.0.1:11211/stat",
  // B6, B7, B8
  "https://storage.googleapis.com:8443/x.png",
  "https://storage.googleapis.com:22/x.png",
  "https://storage.googleapis.com:80/x.png",
  "https://user:pass@storage.googleapis.com/x.png",
  "https://user@storage.googleapis.com/x.png",
  "https://:pass@storage.googleapis.com/x.png",
  "https://storage.googleapis.com@evil.com/x.png",
  "https://storage.googleapis.com%40evil.com/x.png",
  "https://evil.com#@storage.googleapis.com/",
  "https://evil.com\\@storage.googleapis.com/",
  "https://evil.com?@storage.googleapis.com/",
  "https://evil.com/.s3.amazonaws.com/x.png",
  // B9, B10, B12, B13
  "https://storage.googleapis.com.evil.com/x.png",
  "https://evilstorage.googleapis.com/x.png",
  "https://bucket.s3.us-east-1.amazonaws.com.evil.com/x.png",
  "https://a.b.s3.us-east-1.amazonaws.com/x.png",
  "https://bucket.s3-website-us-east-1.amazonaws.com/x.png",
  "https://bucket.s3-website.us-east-1.amazonaws.com/x.png",
  "https://s3.us-east-1.amazonaws.com/bucket/x.png",
  "https://ec2-1-2-3-4.compute-1.amazonaws.com/x.png",
  "https://x.execute-api.us-east-1.amazonaws.com/x.png",
  "https://\u0455torage.googleapis.com/x.png",
  "https://[storage.googleapis.com]/",
  "https://storage.googleapis.com../x.png",
  "https://localhost/x.png",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://169.254.169.254.nip.io/x.png",
  "https://127.0.0.1.nip.io/x.png",
  // B34, B36
  "https://api.img-processing.com/v1/images",
  `https://storage.googleapis.com/${"a".repeat(10)}\r\nHost: evil`,
  "https://storage.googleapis.com/a%0d%0aX-Injected: 1",
  "https://storage.googleapis.com/a%00.png",
  "https://storage.googleapis.com/a\u0000.png",
].map((url) => ({
  name: `policy: ${JSON.stringify(url)}`,
  run: () => importUrl(url),
  code: "URL_NOT_ALLOWED",
}));

// B14, B15, B17, B35: an allowed host whose DNS answers contain a non-public address.
const dnsAnswers: [string, ResolvedAddress[]][] = [
  ["10.0.0.5", [v4("10.0.0.5")]],
  ["127.0.0.1 for an unserved name", [v4("127.0.0.1")]],
  ["127.0.0.2", [v4("127.0.0.2")]],
  ["169.254.169.254", [v4("169.254.169.254")]],
  ["0.0.0.0", [v4("0.0.0.0")]],
  ["100.64.0.1 (CGNAT)", [v4("100.64.0.1")]],
  ["172.16.0.1", [v4("172.16.0.1")]],
  ["172.31.255.254", [v4("172.31.255.254")]],
  ["192.168.1.1", [v4("192.168.1.1")]],
  ["192.0.0.170", [v4("192.0.0.170")]],
  ["192.0.2.10", [v4("192.0.2.10")]],
  ["198.18.0.1", [v4("198.18.0.1")]],
  ["198.51.100.7", [v4("198.51.100.7")]],
  ["203.0.113.9", [v4("203.0.113.9")]],
  ["224.0.0.251 (multicast)", [v4("224.0.0.251")]],
  ["240.0.0.1 (reserved)", [v4("240.0.0.1")]],
  ["255.255.255.255 (broadcast)", [v4("255.255.255.255")]],
  ["one private among public (B15)", [v4("93.184.216.34"), v4("127.0.0.1")]],
  ["private first then public", [v4("10.1.1.1"), v4("8.8.8.8")]],
  ["public v4 with private v6", [v4("93.184.216.34"), v6("fd00::1")]],
  ["::1", [v6("::1")]],
  ["::", [v6("::")]],
  ["::ffff:169.254.169.254 (B17)", [v6("::ffff:169.254.169.254")]],
  ["::ffff:7f00:1", [v6("::ffff:7f00:1")]],
  ["::ffff:10.0.0.1", [v6("::ffff:10.0.0.1")]],
  ["::127.0.0.1 (compatible)", [v6("::127.0.0.1")]],
  ["::ffff:0:127.0.0.1 (SIIT)", [v6("::ffff:0:127.0.0.1")]],
  ["64:ff9b::a9fe:a9fe (NAT64)", [v6("64:ff9b::a9fe:a9fe")]],
  ["64:ff9b::127.0.0.1 (NAT64)", [v6("64:ff9b::127.0.0.1")]],
  ["64:ff9b:1::1 (local NAT64)", [v6("64:ff9b:1::1")]],
  ["2002:7f00:1:: (6to4)", [v6("2002:7f00:1::")]],
  ["2002:a9fe:a9fe:: (6to4)", [v6("2002:a9fe:a9fe::")]],
  ["fc00::1 (ULA)", [v6("fc00::1")]],
  ["fd00:ec2::254 (AWS IMDS v6)", [v6("fd00:ec2::254")]],
  ["fe80::1 (link-local)", [v6("fe80::1")]],
  ["fe80::1%eth0 (zoned)", [v6("fe80::1%eth0")]],
  ["fec0::1 (site-local)", [v6("fec0::1")]],
  ["ff02::1 (multicast)", [v6("ff02::1")]],
  ["2001:db8::1 (documentation)", [v6("2001:db8::1")]],
  ["2001::1 (Teredo)", [v6("2001::1")]],
  ["100::1 (discard)", [v6("100::1")]],
  ["garbage answer", [{ address: "not-an-ip", family: 4 }]],
  ["empty answer", []],
];
const dnsVectors: Vector[] = dnsAnswers.map(([name, answers], index) => ({
  name: `dns answer: ${name}`,
  run: () => {
    dns.set(`vector-${index}.r2.dev`, answers);
    return importUrl(served("/ok.png", `vector-${index}.r2.dev`));
  },
  code: "SOURCE_UNREACHABLE",
}));

// IP literals given straight to the fetcher, with a redirect check that allows everything: the
// socket-level policy alone must refuse them (literal hosts skip DNS look-up in Node).
const allowAll: ImageFetchRequest["checkRedirect"] = (location, from) => ({
  ok: true,
  url: new URL(location, from).href,
});
const literalVectors: Vector[] = [
  "https://127.0.0.1/ok.png",
  "https://2130706433/ok.png",
  "https://0x7f.1/ok.png",
  "https://0177.0.0.1/ok.png",
  "https://127.1/ok.png",
  "https://10.0.0.1/ok.png",
  "https://169.254.169.254/ok.png",
  "https://100.100.100.200/ok.png",
  "https://0.0.0.0/ok.png",
  "https://[::1]/ok.png",
  "https://[::ffff:127.0.0.1]/ok.png",
  "https://[::ffff:a9fe:a9fe]/ok.png",
  "https://[64:ff9b::7f00:1]/ok.png",
  "https://[2002:7f00:1::1]/ok.png",
  "https://[fe80::1]/ok.png",
  "https://[fd00::1]/ok.png",
].map((url) => ({
  name: `literal at the fetcher: ${url}`,
  run: () => fetcher.fetch({ url, checkRedirect: allowAll, ...limits }),
  code: "SOURCE_UNREACHABLE",
}));

const redirectVectors: Vector[] = [
  ["to http metadata (B18)", redirectTo("http://169.254.169.254/latest/meta-data/"), "URL_NOT_ALLOWED"],
  ["to https metadata literal", redirectTo("https://169.254.169.254/"), "URL_NOT_ALLOWED"],
  ["to loopback literal", redirectTo("https://127.0.0.1/ok.png"), "URL_NOT_ALLOWED"],
  ["to mapped loopback literal", redirectTo("https://[::ffff:7f00:1]/ok.png"), "URL_NOT_ALLOWED"],
  ["to decimal loopback", redirectTo("https://2130706433/ok.png"), "URL_NOT_ALLOWED"],
  ["to an open-redirect host (B19)", redirectTo("https://evil.example/x.png"), "URL_NOT_ALLOWED"],
  ["to https->http downgrade (B22)", redirectTo("http://storage.googleapis.com/ok.png"), "URL_NOT_ALLOWED"],
  ["to file: (B22)", redirectTo("file:///etc/passwd"), "URL_NOT_ALLOWED"],
  ["to a non-default port", redirectTo("https://storage.googleapis.com:8443/ok.png"), "URL_NOT_ALLOWED"],
  ["to credentials", redirectTo("https://a:b@storage.googleapis.com/ok.png"), "URL_NOT_ALLOWED"],
  [
    "to an S3 website endpoint",
    redirectTo("https://b.s3-website-us-east-1.amazonaws.com/"),
    "URL_NOT_ALLOWED",
  ],
  ["to own storage alias", redirectTo("https://storage.img-processing.com/og-image.jpg"), "URL_NOT_ALLOWED"],
  ["to localhost", redirectTo("https://localhost/ok.png"), "URL_NOT_ALLOWED"],
  ["to metadata.google.internal", redirectTo("https://metadata.google.internal/"), "URL_NOT_ALLOWED"],
  [
    "to an allowed host resolving to 10/8",
    redirectTo("https://internal.r2.dev/ok.png"),
    "SOURCE_UNREACHABLE",
  ],
  [
    "to an allowed host resolving to ::1",
    redirectTo("https://internal6.r2.dev/ok.png"),
    "SOURCE_UNREACHABLE",
  ],
  ["loop (B21)", served("/chain/0"), "SOURCE_ERROR"],
  ["without Location", served("/no-location"), "SOURCE_ERROR"],
].map(([name, url, code]) => ({
  name: `redirect ${name}`,
  run: () => {
    dns.set("internal.r2.dev", [v4("10.0.0.5")]);
    dns.set("internal6.r2.dev", [v6("::1")]);
    return importUrl(url as string);
  },
  code: code as string,
  serverConnections: name === "loop (B21)" ? 4 : 1,
}));

const bodyVectors: Vector[] = [
  {
    name: "declared Content-Length over the cap",
    run: () => importUrl(served("/declared-too-large")),
    code: "IMAGE_TOO_LARGE",
    serverConnections: 1,
  },
  {
    name: "infinite chunked body (B24)",
    run: () => importUrl(served("/infinite")),
    code: "IMAGE_TOO_LARGE",
    serverConnections: 1,
  },
  {
    name: "gzip bomb (B25)",
    run: () => importUrl(served("/gzip-bomb")),
    code: "IMAGE_TOO_LARGE",
    serverConnections: 1,
  },
  {
    name: "unsupported content encoding",
    run: () => importUrl(served("/compress")),
    code: "SOURCE_ERROR",
    serverConnections: 1,
  },
  {
    name: "slowloris body (B26)",
    run: () => importUrl(served("/slow"), { timeoutMs: 600 }),
    code: "SOURCE_TIMEOUT",
    serverConnections: 1,
  },
  {
    name: "headers never come",
    run: () => importUrl(served("/slow-headers"), { timeoutMs: 600 }),
    code: "SOURCE_TIMEOUT",
    serverConnections: 1,
  },
  {
    name: "1 MB of headers (B28)",
    run: () => importUrl(served("/header-bomb")),
    code: "SOURCE_ERROR",
    serverConnections: 1,
  },
  {
    name: "truncated body",
    run: () => importUrl(served("/truncated")),
    code: "SOURCE_ERROR",
    serverConnections: 1,
  },
  {
    name: "HTML page (B30)",
    run: () => importUrl(served("/html")),
    code: "INVALID_IMAGE",
    serverConnections: 1,
  },
  {
    name: "SVG served as png",
    run: () => importUrl(served("/svg")),
    code: "INVALID_IMAGE",
    serverConnections: 1,
  },
  ...[401, 403, 404, 410].map((status) => ({
    name: `upstream ${status} (B31)`,
    run: () => importUrl(served(`/status/${status}`)),
    code: "SOURCE_NOT_ACCESSIBLE",
    serverConnections: 1,
  })),
  ...[500, 502, 503, 204, 206, 304].map((status) => ({
    name: `upstream ${status} (B32)`,
    run: () => importUrl(served(`/status/${status}`)),
    code: "SOURCE_ERROR",
    serverConnections: 1,
  })),
  {
    name: "unknown host",
    run: () => importUrl(served("/ok.png", "nowhere.r2.dev")),
    code: "SOURCE_UNREACHABLE",
  },
  {
    name: "self-signed certificate (B29)",
    run: () => importUrl(served("/ok.png"), {}, makeFetcher(untrusted.port, trusted)),
    code: "SOURCE_ERROR",
    serverConnections: 0,
  },
  {
    name: "certificate for another name (B29)",
    run: () => importUrl(served("/ok.png"), {}, makeFetcher(wrongName.port, trusted)),
    code: "SOURCE_ERROR",
    serverConnections: 0,
  },
  {
    name: "TLS handshake never completes (B27)",
    run: () => importUrl(served("/ok.png"), { connectTimeoutMs: 300 }, makeFetcher(hangPort, trusted)),
    code: "SOURCE_TIMEOUT",
    serverConnections: 0,
  },
  {
    name: "no trusted CA configured: the public roots do not trust the test CA",
    run: () => importUrl(served("/ok.png"), {}, makeFetcher(server.port)),
    code: "SOURCE_ERROR",
    serverConnections: 1,
  },
];

const VECTORS = [...policyVectors, ...dnsVectors, ...literalVectors, ...redirectVectors, ...bodyVectors];

describe(`SSRF vector table (${VECTORS.length} vectors)`, () => {
  it("has at least 100 vectors", () => {
    expect(VECTORS.length).toBeGreaterThanOrEqual(100);
  });

  it.each(VECTORS.map((vector) => [vector.name, vector] as const))("refuses %s", async (_name, vector) => {
    const before = server.connections;
    const started = Date.now();
    const { code } = await refusal(vector.run());
    expect(code).toMatch(vector.code instanceof RegExp ? vector.code : new RegExp(`^${vector.code}$`));
    // Never a hang: every refusal settles well within the configured deadlines.
    expect(Date.now() - started).toBeLessThan(6_000);
    // Zero connections to anything but this file's loopback servers, and none at all unless the
    // vector needs the allowed test host itself (redirect and body vectors).
    expect(strayConnections()).toEqual([]);
    expect(server.connections - before).toBe(vector.serverConnections ?? 0);
    if (vector.serverConnections === undefined) expect(spy.connections).toEqual([]);
  });
});

describe("Content-Length that lies (B23)", () => {
  it("reads exactly the declared length and never past it (the rest is not this response)", async () => {
    const result = await importUrl(served("/lying-length"));
    // The 1000 bytes are a PNG signature plus zeros: the upload path then refuses them as undecodable.
    expect(result.data.byteLength).toBe(1000);
    expect(strayConnections()).toEqual([]);
  });
});

describe("messages", () => {
  it("are client-facing sentences that never echo upstream bodies or internal addresses", async () => {
    dns.set("leak.r2.dev", [v4("10.9.8.7")]);
    const unreachable = await refusal(importUrl(served("/ok.png", "leak.r2.dev")));
    expect(unreachable.message).toBe("could not be reached (its host resolves to a non-public address)");
    const forbidden = await refusal(importUrl(served("/status/403")));
    expect(forbidden.message).toBe(
      "is not accessible (the source answered 403); it must be public or pre-signed",
    );
    const large = await refusal(importUrl(served("/infinite")));
    expect(large.message).toBe("must point to a file no larger than 2MB");
    const slow = await refusal(importUrl(served("/slow"), { timeoutMs: 300 }));
    expect(slow.message).toBe("did not answer within 0.3s");
  });
});
