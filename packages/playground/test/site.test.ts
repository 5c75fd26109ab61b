import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createPlaygroundSite } from "../src/index.js";

describe("createPlaygroundSite", () => {
  it("serves the pages no-cache with an ETag and CSP, and their assets immutable by content hash", () => {
    const site = createPlaygroundSite();
    const page = site.respond({ method: "GET", url: "/?from=somewhere" })!;
    expect(page.status).toBe(200);
    expect(page.headers["Content-Type"]).toBe("text/html; charset=utf-8");
    expect(page.headers["Cache-Control"]).toBe("no-cache");
    expect(page.headers["Content-Security-Policy"]).toContain("connect-src 'self'");
    const html = new TextDecoder().decode(page.body);
    const script = /src="(\/playground\/app\.[A-Za-z0-9_-]{16}\.js)"/.exec(html)?.[1];
    const style = /href="(\/playground\/app\.[A-Za-z0-9_-]{16}\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    for (const asset of [script!, style!]) {
      const answer = site.respond({ method: "GET", url: asset })!;
      expect(answer.status).toBe(200);
      expect(answer.headers["Cache-Control"]).toBe("public, max-age=31536000, immutable");
      expect(Number(answer.headers["Content-Length"])).toBe(answer.body.byteLength);
      expect(answer.body.byteLength).toBeGreaterThan(1_000);
    }
    // Nothing on the pages comes from another origin.
    expect(html).not.toMatch(/(src|href)="https?:/);
    const docs = new TextDecoder().decode(site.respond({ method: "GET", url: "/docs" })!.body);
    expect(docs).not.toMatch(/(src|href)="https?:/);
    expect(docs).toMatch(/src="\/docs\/swagger-ui\/\d+\.\d+\.\d+\/swagger-ui-bundle\.js"/);
  });

  it("answers 304 to a matching If-None-Match, HEAD without a body, and leaves other paths alone", () => {
    const site = createPlaygroundSite();
    const page = site.respond({ method: "GET", url: "/docs" })!;
    const again = site.respond({
      method: "GET",
      url: "/docs/",
      headers: { "if-none-match": page.headers.ETag },
    })!;
    expect(again.status).toBe(304);
    expect(again.body.byteLength).toBe(0);
    const head = site.respond({ method: "HEAD", url: "/" })!;
    expect(head.status).toBe(200);
    expect(head.body.byteLength).toBe(0);
    expect(Number(head.headers["Content-Length"])).toBeGreaterThan(0);
    expect(site.respond({ method: "POST", url: "/" })).toBeUndefined();
    expect(site.respond({ method: "GET", url: "/v1/images" })).toBeUndefined();
    expect(site.respond({ method: "GET", url: "/playground/app.unknown.js" })).toBeUndefined();
  });

  it("serves only what is turned on", () => {
    const docsOnly = createPlaygroundSite({ playground: false });
    expect(docsOnly.respond({ method: "GET", url: "/" })).toBeUndefined();
    expect(docsOnly.respond({ method: "GET", url: "/docs" })?.status).toBe(200);
    expect(docsOnly.paths.some((each) => each.startsWith("/playground/"))).toBe(false);
    const playgroundOnly = createPlaygroundSite({ docs: false });
    expect(playgroundOnly.respond({ method: "GET", url: "/docs" })).toBeUndefined();
    expect(playgroundOnly.paths.some((each) => each.startsWith("/docs"))).toBe(false);
  });

  it("mounts on node:http (and so on Express) as a middleware that passes other requests on", async () => {
    const site = createPlaygroundSite();
    const server = createServer((request, response) =>
      site.middleware(request, response, () => {
        response.writeHead(404, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ next: true }));
      }),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const page = await fetch(`${base}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("pixport playground");
      const other = await fetch(`${base}/v1/images`);
      expect(other.status).toBe(404);
      expect(await other.json()).toEqual({ next: true });
    } finally {
      server.close();
    }
  });
});
