import { describe, expect, it } from "vitest";
import { isImagePipelineError } from "../src/index.js";
import { createUrlImportPolicy } from "../src/internal.js";
import { hostMatches, hostPatternProblem, normalizeHostName } from "../src/policies/host-pattern.js";
import type { UrlImportDecision } from "../src/policies/url-import-policy.js";

const policy = createUrlImportPolicy({
  storageBaseUrls: ["http://localhost:3000", "https://cdn.example.com/px"],
});

function remote(decision: UrlImportDecision) {
  if (!decision.ok || decision.source.kind !== "remote") throw new Error(JSON.stringify(decision));
  return decision.source;
}

describe("host patterns", () => {
  it("matches label by label; * is exactly one whole label or a glob inside one label", () => {
    expect(hostMatches("*.r2.dev", "pub-1.r2.dev")).toBe(true);
    expect(hostMatches("*.r2.dev", "a.b.r2.dev")).toBe(false);
    expect(hostMatches("*.r2.dev", "r2.dev")).toBe(false);
    expect(hostMatches("doc-*-docs.googleusercontent.com", "doc-0s-4g-docs.googleusercontent.com")).toBe(
      true,
    );
    expect(hostMatches("doc-*-docs.googleusercontent.com", "doc--docs.googleusercontent.com")).toBe(false);
    expect(hostMatches("doc-*-docs.googleusercontent.com", "lh3.googleusercontent.com")).toBe(false);
  });

  it("refuses patterns whose wildcard covers the registrable domain, and malformed ones", () => {
    expect(hostPatternProblem("*.com")).toMatch(/two literal labels/);
    expect(hostPatternProblem("*.*")).toMatch(/two literal labels/);
    expect(hostPatternProblem("a.*.com")).toMatch(/two literal labels/);
    expect(hostPatternProblem("Images.Example.com")).toMatch(/lower case/);
    expect(hostPatternProblem("a..example.com")).toMatch(/invalid label/);
    expect(hostPatternProblem("*.cdn.example.com")).toBeNull();
    expect(() => createUrlImportPolicy({ additionalOrigins: ["*.com"] })).toThrow(/additionalOrigins/);
  });

  it("normalises one trailing dot and refuses non-DNS hosts", () => {
    expect(normalizeHostName("Storage.GoogleAPIs.com.")).toBe("storage.googleapis.com");
    expect(normalizeHostName("storage.googleapis.com..")).toBeNull();
    expect(normalizeHostName("127.0.0.1")).toBeNull();
    expect(normalizeHostName("localhost")).toBeNull();
    expect(normalizeHostName("a_b.example.com")).toBeNull();
  });
});

describe("origin policy: accepted URLs", () => {
  it.each([
    [
      "https://bucket.s3.us-east-1.amazonaws.com/cat.png?X-Amz-Signature=abc",
      "https://bucket.s3.us-east-1.amazonaws.com/cat.png?X-Amz-Signature=abc",
    ],
    ["https://bucket.s3.amazonaws.com/cat.png", "https://bucket.s3.amazonaws.com/cat.png"],
    [
      "https://s3.amazonaws.com/my.dotted.bucket/cat.png",
      "https://s3.amazonaws.com/my.dotted.bucket/cat.png",
    ],
    [
      "https://acct.blob.core.windows.net/c/cat.png?sv=1&sig=2",
      "https://acct.blob.core.windows.net/c/cat.png?sv=1&sig=2",
    ],
    ["https://pub-0123.r2.dev/cat.png", "https://pub-0123.r2.dev/cat.png"],
    ["https://storage.googleapis.com/b/cat.png", "https://storage.googleapis.com/b/cat.png"],
    // B11: case and one trailing dot normalised; fragment dropped; explicit default port accepted.
    ["https://STORAGE.GoogleAPIs.com./x.png#frag", "https://storage.googleapis.com/x.png"],
    ["https://storage.googleapis.com:443/x.png", "https://storage.googleapis.com/x.png"],
    // B12: full-width dots are normalised by the URL parser to the real host.
    ["https://storage\uff0egoogleapis\uff0ecom/x.png", "https://storage.googleapis.com/x.png"],
  ])("%s", (input, expected) => {
    expect(remote(policy.resolve(input))).toEqual({ kind: "remote", url: expected, provider: null });
  });

  it("rewrites Dropbox share links to dl=1", () => {
    expect(remote(policy.resolve("https://www.dropbox.com/s/abc123/cat.png?dl=0"))).toEqual({
      kind: "remote",
      url: "https://www.dropbox.com/s/abc123/cat.png?dl=1",
      provider: "dropbox",
    });
    expect(remote(policy.resolve("https://www.dropbox.com/scl/fi/xyz/cat.png?rlkey=k&raw=1")).url).toBe(
      "https://www.dropbox.com/scl/fi/xyz/cat.png?rlkey=k&dl=1",
    );
  });

  it("rewrites Google Drive file links to uc?export=download", () => {
    const expected = "https://drive.google.com/uc?export=download&id=1AbCdEfGhIjKlMnOp";
    for (const input of [
      "https://drive.google.com/file/d/1AbCdEfGhIjKlMnOp/view?usp=sharing",
      "https://drive.google.com/file/d/1AbCdEfGhIjKlMnOp",
      "https://drive.google.com/open?id=1AbCdEfGhIjKlMnOp",
      "https://drive.google.com/uc?id=1AbCdEfGhIjKlMnOp&export=view",
    ]) {
      expect(remote(policy.resolve(input))).toEqual({
        kind: "remote",
        url: expected,
        provider: "google-drive",
      });
    }
  });

  it("rewrites OneDrive short links to the shares API", () => {
    const source = remote(policy.resolve("https://1drv.ms/i/s!AkLpk-abc?e=x1"));
    expect(source.provider).toBe("onedrive");
    const encoded = btoa("https://1drv.ms/i/s!AkLpk-abc?e=x1")
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    expect(source.url).toBe(`https://api.onedrive.com/v1.0/shares/u!${encoded}/root/content`);
  });

  it("resolves own storage URLs (configured bases and the original alias) to public-store keys", () => {
    const storage = (url: string) => policy.resolve(url);
    const id = "image_abcdefghijklmnopqrstuvwx";
    expect(storage(`http://localhost:3000/images/${id}.png`)).toEqual({
      ok: true,
      source: { kind: "storage", keys: [`images/${id}.png`] },
    });
    expect(storage(`https://cdn.example.com/px/images/${id}.jpeg?v=1`)).toEqual({
      ok: true,
      source: { kind: "storage", keys: [`images/${id}.jpg`] },
    });
    // Without an extension: a copy in any stored format (what the public-file route answers).
    expect(storage(`http://localhost:3000/images/${id}`)).toEqual({
      ok: true,
      source: {
        kind: "storage",
        keys: ["jpg", "png", "webp", "avif", "gif", "tiff"].map((ext) => `images/${id}.${ext}`),
      },
    });
    for (const ext of ["gif", "avif", "tiff", "GIF"]) {
      expect(storage(`http://localhost:3000/images/${id}.${ext}`), ext).toEqual({
        ok: true,
        source: { kind: "storage", keys: [`images/${id}.${ext.toLowerCase()}`] },
      });
    }
    expect(storage("https://storage.img-processing.com/og-image.jpg")).toEqual({
      ok: true,
      source: { kind: "storage", keys: ["og-image.jpg"] },
    });
    expect(storage("https://STORAGE.img-processing.com./og-image.jpg")).toEqual({
      ok: true,
      source: { kind: "storage", keys: ["og-image.jpg"] },
    });
  });
});

describe("origin policy: refused URLs", () => {
  it.each([
    // B1, B2, B5: not https / IP hosts in every notation
    ["http://169.254.169.254/latest/meta-data/", /https URL/],
    ["https://169.254.169.254/latest/meta-data/", /not an IP address/],
    ["https://2130706433/", /not an IP address/],
    ["https://0x7f.1/", /not an IP address/],
    ["https://0177.0.0.1/", /not an IP address/],
    ["https://127.1/", /not an IP address/],
    ["https://012.0.0.1/", /not an IP address/],
    ["https://[::1]/", /not an IP address/],
    ["https://[::ffff:a9fe:a9fe]/", /not an IP address/],
    ["http://bucket.s3.us-east-1.amazonaws.com/x.png", /https URL/],
    // B4
    ["file:///etc/passwd", /https URL/],
    ["gopher://storage.googleapis.com/x", /https URL/],
    ["data:image/png;base64,AAAA", /https URL/],
    ["ftp://storage.googleapis.com/x.png", /https URL/],
    ["javascript:alert(1)", /https URL/],
    ["blob:https://storage.googleapis.com/x", /https URL/],
    ["//storage.googleapis.com/x.png", /valid absolute URL/],
    // B6, B7, B8
    ["https://storage.googleapis.com:8443/x", /default https port/],
    ["https://storage.googleapis.com:22/x", /default https port/],
    ["https://user:pass@storage.googleapis.com/x", /credentials/],
    ["https://user@storage.googleapis.com/x", /credentials/],
    ["https://storage.googleapis.com@evil.com/x", /credentials/],
    ["https://evil.com#@storage.googleapis.com/", /allowed origin/],
    ["https://evil.com\\@storage.googleapis.com/", /allowed origin/],
    ["https://evil.com/.s3.amazonaws.com/x.png", /allowed origin/],
    // B9: suffix and substring tricks
    ["https://storage.googleapis.com.evil.com/", /allowed origin/],
    ["https://evilstorage.googleapis.com/", /allowed origin/],
    ["https://bucket.s3.us-east-1.amazonaws.com.evil.com/", /allowed origin/],
    ["https://s3.amazonaws.com.evil.com/x", /allowed origin/],
    ["https://x.blob.core.windows.net.evil.com/x", /allowed origin/],
    ["https://storage.googleapis.com../x.png", /valid host name/],
    // B10: decided — multi-label buckets, regional path style and website endpoints are refused
    ["https://a.b.s3.us-east-1.amazonaws.com/x.png", /allowed origin/],
    ["https://s3.us-east-1.amazonaws.com/bucket/x.png", /allowed origin/],
    ["https://bucket.s3-website-us-east-1.amazonaws.com/x.png", /allowed origin|website/],
    ["https://bucket.s3-website.us-east-1.amazonaws.com/x.png", /allowed origin|website/],
    ["https://bucket.s3.dualstack.us-east-1.amazonaws.com/x.png", /allowed origin/],
    ["https://a.b.r2.dev/x.png", /allowed origin/],
    ["https://r2.dev/x.png", /allowed origin/],
    // B12: homograph (Cyrillic s) is punycode, not the allowed host
    ["https://\u0455torage.googleapis.com/x.png", /allowed origin/],
    // B13, B36
    ["https://[storage.googleapis.com]/", /valid absolute URL/],
    ["https://storage.googleapis.com/a\r\nHost: evil.com", /control characters/],
    ["https://storage.googleapis.com/a%0d%0aX: y", /control characters/],
    ["https://storage.googleapis.com/a%00.png", /control characters/],
    ["https://storage.googleapis.com/a b.png", /control characters/],
    // Other origins and share-link paths that are not files
    ["https://example.com/x.png", /allowed origin/],
    ["https://dropbox.com/s/abc/x.png", /allowed origin/],
    ["https://www.dropbox.com/home", /Dropbox file share link/],
    ["https://drive.google.com/drive/folders/abc", /Google Drive file share link/],
    ["https://docs.google.com/uc?id=1AbCdEfGhIjKlMnOp", /allowed origin/],
    ["https://1drv.ms/", /OneDrive share link/],
    ["https://storage.img-processing.com:8443/og-image.jpg", /default https port/],
    ["http://storage.img-processing.com/og-image.jpg", /https URL/],
  ])("%s", (input, message) => {
    const decision = policy.resolve(input);
    expect(decision.ok).toBe(false);
    if (!decision.ok) {
      expect(decision.code).toBe("URL_NOT_ALLOWED");
      expect(decision.message).toMatch(message);
    }
  });

  it("refuses own-storage paths that name no public key, without touching the network", () => {
    for (const url of [
      "http://localhost:3000/Images/UPPER.png",
      "https://storage.img-processing.com/a%2f..%2fb",
      "https://cdn.example.com/px/",
    ]) {
      const decision = policy.resolve(url);
      expect(decision, url).toMatchObject({ ok: false, code: "SOURCE_NOT_ACCESSIBLE" });
    }
    // Outside the base path prefix it is just another origin.
    expect(policy.resolve("https://cdn.example.com/other/x.png")).toMatchObject({
      ok: false,
      code: "URL_NOT_ALLOWED",
    });
  });

  it("does not treat storage.img-processing.com as own storage when the alias is off", () => {
    const strict = createUrlImportPolicy({ originalStorageAlias: false });
    expect(strict.resolve("https://storage.img-processing.com/og-image.jpg")).toMatchObject({
      ok: false,
      code: "URL_NOT_ALLOWED",
    });
  });

  it("extends and replaces the allow-list from options", () => {
    const extended = createUrlImportPolicy({
      additionalOrigins: ["images.example.com", "*.cdn.example.org"],
    });
    expect(extended.resolve("https://images.example.com/a.png").ok).toBe(true);
    expect(extended.resolve("https://eu.cdn.example.org/a.png").ok).toBe(true);
    expect(extended.resolve("https://storage.googleapis.com/a.png").ok).toBe(true);
    const replaced = createUrlImportPolicy({ allowedOrigins: ["images.example.com"] });
    expect(replaced.resolve("https://storage.googleapis.com/a.png").ok).toBe(false);
    try {
      createUrlImportPolicy({ maxRedirects: 9 });
      expect.unreachable();
    } catch (error) {
      expect(isImagePipelineError(error) && error.code).toBe("INVALID_CONFIGURATION");
    }
  });
});

describe("redirect checks", () => {
  const s3 = remote(policy.resolve("https://bucket.s3.amazonaws.com/a.png"));
  const dropbox = remote(policy.resolve("https://www.dropbox.com/s/abc/cat.png"));
  const drive = remote(policy.resolve("https://drive.google.com/file/d/1AbCdEfGhIjKlMnOp/view"));
  const onedrive = remote(policy.resolve("https://1drv.ms/i/s!abc"));

  it("follows allowed origins for plain sources and each provider's download hosts for share links", () => {
    expect(policy.checkRedirect(s3, "/b.png", s3.url)).toEqual({
      ok: true,
      url: "https://bucket.s3.amazonaws.com/b.png",
    });
    expect(policy.checkRedirect(s3, "https://storage.googleapis.com/b/x.png", s3.url).ok).toBe(true);
    expect(
      policy.checkRedirect(dropbox, "https://uc1a2b3c.dl.dropboxusercontent.com/cd/0/x", dropbox.url).ok,
    ).toBe(true);
    expect(
      policy.checkRedirect(drive, "https://drive.usercontent.google.com/download?id=1", drive.url).ok,
    ).toBe(true);
    expect(
      policy.checkRedirect(drive, "https://doc-0s-4g-docs.googleusercontent.com/docs/x", drive.url).ok,
    ).toBe(true);
    expect(policy.checkRedirect(onedrive, "https://public.bn.files.1drv.com/y4m", onedrive.url).ok).toBe(
      true,
    );
  });

  it.each([
    [s3, "https://evil.example/x.png", /not allowed \(evil.example\)/],
    [s3, "http://169.254.169.254/", /https URL/],
    [s3, "http://bucket.s3.amazonaws.com/a.png", /https URL/],
    [s3, "file:///etc/passwd", /https URL/],
    [s3, "https://127.0.0.1/", /IP address/],
    [s3, "https://[::ffff:7f00:1]/", /IP address/],
    [s3, "https://user:x@storage.googleapis.com/", /credentials/],
    [s3, "https://storage.googleapis.com:8443/", /default https port/],
    [s3, "https://bucket.s3-website-us-east-1.amazonaws.com/", /website/],
    [s3, "https://storage.img-processing.com/og-image.jpg", /not allowed/],
    [s3, "https://x.dl.dropboxusercontent.com/x", /not allowed/],
    [dropbox, "https://storage.googleapis.com/x.png", /not allowed/],
    [dropbox, "https://a.b.dl.dropboxusercontent.com/x", /not allowed/],
    [drive, "https://lh3.googleusercontent.com/x", /not allowed/],
    [drive, "https://accounts.google.com/signin", /not allowed/],
    [onedrive, "https://login.live.com/", /not allowed/],
    [s3, "https://storage.googleapis.com/a\nb", /invalid URL/],
  ])("refuses redirect %#", (source, location, message) => {
    const decision = policy.checkRedirect(source, location as string, source.url);
    expect(decision.ok).toBe(false);
    if (!decision.ok) expect(decision.message).toMatch(message as RegExp);
  });
});
