import type { IncomingMessage, ServerResponse } from "node:http";
import type { ImageFetcher, ImageFetchRequest } from "@pixport/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestCertificates, startTestHttpsServer, type TestHttpsServer } from "../network.js";

/**
 * The test network an {@link ImageFetcher} under test must be pointed at: a real HTTPS server on
 * 127.0.0.1 with a certificate for `hosts`, signed by `ca`. The adapter's factory maps it to its own
 * options: resolve each of `hosts` (and only them) to `127.0.0.1`, and `privateHosts` to the private
 * addresses given, trust `ca`, connect to `port`, and exempt 127.0.0.1 from the public-address rule
 * for `hosts` only, so every other address keeps the production rules.
 */
export interface FetcherTestNetwork {
  /** Host names served by the test server. */
  hosts: readonly string[];
  /** Host names that resolve to a private or loopback address, which must be refused. */
  privateHosts: ReadonlyMap<string, string>;
  /** The port every hop connects to. */
  port: number;
  /** The CA certificate (PEM) of the test server's certificate. */
  ca: string;
}

/** Options of {@link describeImageFetcherConformance}. */
export interface ImageFetcherConformanceOptions {
  name: string;
  /** Builds the fetcher under test for the suite's network. */
  create(network: FetcherTestNetwork): ImageFetcher;
}

const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
const HOST = "images.fetcher.test";
const OTHER = "cdn.fetcher.test";
const REFUSED = "refused.fetcher.test";
const PRIVATE = "intranet.fetcher.test";

type Route = (request: IncomingMessage, response: ServerResponse) => void;

/** The suite's loopback origin and the fetcher under test, shared by its test groups. */
interface FetcherHarness {
  /** The fetcher under test (created before the first test). */
  fetcher: ImageFetcher;
  /** `host + path` → handler of the loopback origin; cleared before every test. */
  routes: Map<string, Route>;
  /** Every request the origin received in the current test. */
  seen: { host: string; path: string; headers: IncomingMessage["headers"] }[];
  /** A request for `url` with the suite's limits and a redirect check that refuses one host. */
  request(url: string, overrides?: Partial<ImageFetchRequest>): ImageFetchRequest;
  /** A route answering the PNG fixture. */
  png: Route;
  /** The loopback origin (started before the first test). */
  server: TestHttpsServer;
}

/** Rejects with the ImagePipelineError code of a failed fetch, or fails the test. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, "the fetch should have failed").toBeInstanceOf(Error);
  return (error as { code?: string }).code ?? "(no code)";
}

/**
 * The semantics every {@link ImageFetcher} keeps (see the port's documentation), over a real
 * HTTPS server: the bytes and the final URL; redirects followed by hand, each hop passed to
 * `checkRedirect` before any connection to its host, at most `maxRedirects`; `maxBytes` counted on
 * the body whatever `Content-Length` says; the body checked to be an image; 4xx, 5xx, private
 * addresses and deadlines mapped to their error codes; no request headers of the caller forwarded.
 */
export function describeImageFetcherConformance(options: ImageFetcherConformanceOptions): void {
  describe(`ImageFetcher conformance: ${options.name}`, () => {
    let server: TestHttpsServer;
    const routes = new Map<string, Route>();
    const seen: { host: string; path: string; headers: IncomingMessage["headers"] }[] = [];

    beforeAll(async () => {
      const certificates = createTestCertificates([HOST, OTHER, REFUSED]);
      server = await startTestHttpsServer(certificates, (request, response) => {
        const host = (request.headers.host ?? "").split(":")[0] ?? "";
        seen.push({ host, path: request.url ?? "/", headers: request.headers });
        const route = routes.get(`${host}${request.url ?? "/"}`);
        if (route === undefined) {
          response.writeHead(404).end();
          return;
        }
        route(request, response);
      });
      harness.server = server;
      harness.fetcher = options.create({
        hosts: [HOST, OTHER, REFUSED],
        privateHosts: new Map([[PRIVATE, "10.20.30.40"]]),
        port: server.port,
        ca: certificates.ca,
      });
    });
    afterAll(() => server?.close());
    beforeEach(() => {
      routes.clear();
      seen.length = 0;
    });

    const request = (url: string, overrides: Partial<ImageFetchRequest> = {}): ImageFetchRequest => ({
      url,
      checkRedirect: (location, from) => {
        const next = new URL(location, from);
        return next.hostname === REFUSED
          ? { ok: false, code: "URL_NOT_ALLOWED", message: `was redirected to a host that is not allowed` }
          : { ok: true, url: next.toString() };
      },
      maxRedirects: 3,
      maxBytes: 1024 * 1024,
      connectTimeoutMs: 2_000,
      timeoutMs: 3_000,
      ...overrides,
    });
    const png: Route = (_request, response) => {
      response.writeHead(200, { "content-type": "image/png", "content-length": PNG.length }).end(PNG);
    };

    const harness: FetcherHarness = {
      fetcher: undefined as unknown as ImageFetcher,
      server: undefined as unknown as TestHttpsServer,
      routes,
      seen,
      request,
      png,
    };
    fetchAndRedirectTests(harness);
    failureAndPrivacyTests(harness);
  });
}

function fetchAndRedirectTests(harness: FetcherHarness): void {
  const { routes, seen, request, png } = harness;
  it("returns the body and the URL that answered", async () => {
    routes.set(`${HOST}/cat.png`, png);
    const fetched = await harness.fetcher.fetch(request(`https://${HOST}/cat.png`));
    expect(Buffer.from(fetched.data).equals(PNG)).toBe(true);
    expect(fetched.url).toBe(`https://${HOST}/cat.png`);
  });

  it("follows redirects across hosts, passing each hop to checkRedirect", async () => {
    routes.set(`${HOST}/a`, (_request, response) => {
      response.writeHead(302, { location: `https://${OTHER}/b` }).end();
    });
    routes.set(`${OTHER}/b`, (_request, response) => {
      response.writeHead(301, { location: "/cat.png" }).end();
    });
    routes.set(`${OTHER}/cat.png`, png);
    const hops: string[] = [];
    const base = request(`https://${HOST}/a`);
    const fetched = await harness.fetcher.fetch({
      ...base,
      checkRedirect: (location, from) => {
        hops.push(`${from} -> ${location}`);
        return base.checkRedirect(location, from);
      },
    });
    expect(fetched.url).toBe(`https://${OTHER}/cat.png`);
    expect(hops).toEqual([`https://${HOST}/a -> https://${OTHER}/b`, `https://${OTHER}/b -> /cat.png`]);
  });

  it("never connects to a hop checkRedirect refuses, and fails with its code", async () => {
    routes.set(`${HOST}/away`, (_request, response) => {
      response.writeHead(302, { location: `https://${REFUSED}/cat.png` }).end();
    });
    routes.set(`${REFUSED}/cat.png`, png);
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/away`)))).toBe("URL_NOT_ALLOWED");
    expect(seen.map((entry) => entry.host)).toEqual([HOST]);
  });

  it("stops after maxRedirects with SOURCE_ERROR", async () => {
    for (let hop = 0; hop < 5; hop++) {
      routes.set(`${HOST}/loop${hop}`, (_request, response) => {
        response.writeHead(302, { location: `/loop${hop + 1}` }).end();
      });
    }
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/loop0`, { maxRedirects: 2 })))).toBe(
      "SOURCE_ERROR",
    );
    expect(seen).toHaveLength(3);
  });

  it("counts maxBytes on the body, whatever Content-Length says", async () => {
    const big = Buffer.concat([PNG, Buffer.alloc(64 * 1024)]);
    routes.set(`${HOST}/big.png`, (_request, response) => {
      // Claims a small body, sends a large one (chunked: no Content-Length at all).
      response.writeHead(200, { "content-type": "image/png" });
      response.end(big);
    });
    expect(
      await codeOf(harness.fetcher.fetch(request(`https://${HOST}/big.png`, { maxBytes: 16 * 1024 }))),
    ).toBe("IMAGE_TOO_LARGE");
  });

  it("checks the bytes, not the content type", async () => {
    routes.set(`${HOST}/page.png`, (_request, response) => {
      response.writeHead(200, { "content-type": "image/png" }).end("<html>not an image</html>");
    });
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/page.png`)))).toBe("INVALID_IMAGE");
  });
}

function failureAndPrivacyTests(harness: FetcherHarness): void {
  const { routes, seen, request, png } = harness;
  it("maps a 404 to SOURCE_NOT_ACCESSIBLE and a 500 to SOURCE_ERROR", async () => {
    routes.set(`${HOST}/broken.png`, (_request, response) => {
      response.writeHead(500).end();
    });
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/missing.png`)))).toBe(
      "SOURCE_NOT_ACCESSIBLE",
    );
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/broken.png`)))).toBe("SOURCE_ERROR");
  });

  it("refuses private addresses and IP literals before connecting", async () => {
    // The port leaves the code to the adapter (refused by policy, or "could not be reached"),
    // and requires that no connection is made.
    const refusals = ["URL_NOT_ALLOWED", "SOURCE_UNREACHABLE"];
    const before = harness.server.connections;
    expect(refusals).toContain(await codeOf(harness.fetcher.fetch(request(`https://${PRIVATE}/cat.png`))));
    expect(refusals).toContain(
      await codeOf(harness.fetcher.fetch(request(`https://127.0.0.1:${harness.server.port}/cat.png`))),
    );
    expect(harness.server.connections).toBe(before);
    expect(seen).toEqual([]);
  });

  it("settles within timeoutMs when the source stalls, with SOURCE_TIMEOUT", async () => {
    routes.set(`${HOST}/slow.png`, (_request, response) => {
      response.writeHead(200, { "content-type": "image/png" });
      response.write(PNG.subarray(0, 8));
      // ... and nothing more.
    });
    // Without its deadline the fetch would hang until the test's own timeout fails it.
    expect(await codeOf(harness.fetcher.fetch(request(`https://${HOST}/slow.png`, { timeoutMs: 500 })))).toBe(
      "SOURCE_TIMEOUT",
    );
  });

  it("sends no credentials or cookies", async () => {
    routes.set(`${HOST}/set-cookie`, (_request, response) => {
      response.writeHead(302, { location: "/cat.png", "set-cookie": "session=secret; Path=/" }).end();
    });
    routes.set(`${HOST}/cat.png`, png);
    await harness.fetcher.fetch(request(`https://${HOST}/set-cookie`));
    for (const { headers } of seen) {
      expect(headers.authorization).toBeUndefined();
      expect(headers.cookie).toBeUndefined();
      expect(headers["x-api-key"]).toBeUndefined();
    }
    expect(seen).toHaveLength(2);
  });
}
