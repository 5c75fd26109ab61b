import type { AddressInfo } from "node:net";
import { createServer as createTcpServer } from "node:net";
import { describe, expect, it } from "vitest";
import {
  dns,
  importUrl,
  lastHeaders,
  lookups,
  PNG,
  redirectTo,
  refusal,
  served,
  server,
  spy,
  strayConnections,
  useSsrfServers,
  v4,
} from "./ssrf-harness.js";

// The accepted cases, the lying Content-Length and the refusal messages, against the loopback
// servers of ssrf-harness.ts (real TLS, a spy below net/tls that refuses any other destination).

useSsrfServers();

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
