import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { originVariantUrl, sign, variantUrl } from "@pixport/url-signer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newKey, quadrants, removeDir, upload, useServer } from "./harness.js";

const SECRET = "variant-spelling-secret-0123456789";
/** The contract's error body (a 404 has the message shape). */
const ERROR_KEYS = ["code", "error", "message", "status", "type"];

/** A directory origin holding `a.png` (made before the server starts). */
let assets: string;
beforeAll(async () => {
  assets = await mkdtemp(path.join(tmpdir(), "pixport-spelling-origin-"));
  await writeFile(path.join(assets, "a.png"), await quadrants(80, 40));
});
afterAll(() => removeDir(assets));

// A CDN keys its cache by the URL as sent: every variant has exactly one spelling that answers,
// the one the URL signer writes, so the same picture is never cached under two keys.
describe("variant URLs have one spelling", () => {
  const running = useServer(() => ({
    delivery: { signingKeys: [SECRET], origins: { assets: { type: "fs", directory: assets } } },
  }));
  let imageId: string;
  let canonical: string;

  beforeAll(async () => {
    const key = await newKey(running.server, "live", "spelling");
    imageId = (await upload(running.url, key, await quadrants(80, 40), "spelling")).id;
    expect((await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
    canonical = new URL(
      await variantUrl({
        base: running.url,
        secret: SECRET,
        imageId,
        modifiers: ["w_40", "h_20"],
        ext: "png",
      }),
    ).pathname;
  });

  it("the signer's spelling answers", async () => {
    expect(canonical).toMatch(/\/h_20,w_40\.png$/);
    expect((await call(running.url, "GET", canonical)).status).toBe(200);
  });

  it.each([
    ["an upper-case extension", (path: string) => path.replace(/\.png$/, ".PNG"), "h_20,w_40.png"],
    ["an upper-case .JPG", (path: string) => path.replace(/\.png$/, ".JPG"), "h_20,w_40.jpg"],
    ["a mixed-case .WebP", (path: string) => path.replace(/\.png$/, ".WebP"), "h_20,w_40.webp"],
    ["an upper-case .AUTO", (path: string) => path.replace(/\.png$/, ".AUTO"), "h_20,w_40.auto"],
    ["a trailing slash", (path: string) => `${path}/`, "without a trailing slash"],
    [
      "a trailing slash after .WEBP",
      (path: string) => `${path.replace(/\.png$/, ".WEBP")}/`,
      "trailing slash",
    ],
    ["modifiers in another order", (path: string) => path.replace("h_20,w_40", "w_40,h_20"), "h_20,w_40.png"],
    ["a percent-encoded comma", (path: string) => path.replace(",", "%2C"), "percent-encoding"],
    ["an empty modifier", (path: string) => path.replace(",", ",,"), "h_20,w_40.png"],
  ])("%s is a 404 naming the spelling", async (_name, respell, named) => {
    const response = await call(running.url, "GET", respell(canonical));
    expect(response.status, JSON.stringify(response.json)).toBe(404);
    expect(Object.keys(response.json).sort()).toEqual(ERROR_KEYS);
    expect(response.json.code).toBe("ROUTE_NOT_FOUND");
    expect(response.json.message).toMatch(/one spelling/);
    expect(response.json.message).toContain(named);
  });

  it("a percent-encoded signature character is a 404", async () => {
    // Find a signature with a character worth encoding ("-" or "_" of base64url).
    let path = "";
    for (let width = 10; width < 400 && path === ""; width += 1) {
      const signature = await sign(SECRET, `/${imageId}/w_${width}.png`);
      const at = signature.search(/[-_]/);
      if (at < 0) continue;
      const encoded = `${signature.slice(0, at)}%${signature.charCodeAt(at).toString(16).toUpperCase()}${signature.slice(at + 1)}`;
      path = `/v/${encoded}/${imageId}/w_${width}.png`;
      expect((await call(running.url, "GET", `/v/${signature}/${imageId}/w_${width}.png`)).status).toBe(200);
    }
    expect(path).not.toBe("");
    const response = await call(running.url, "GET", path);
    expect(response.status).toBe(404);
    expect(response.json.code).toBe("ROUTE_NOT_FOUND");
  });

  it("q_auto and q_auto:good are one variant: each answers as signed, a miss on one is a hit on the other", async () => {
    const signed = async (file: string) =>
      `/v/${await sign(SECRET, `/${imageId}/${file}`)}/${imageId}/${file}`;
    const long = await call(running.url, "GET", await signed("q_auto:good,w_40.webp"));
    expect(long.status, JSON.stringify(long.json)).toBe(200);
    expect(long.headers.get("content-type")).toBe("image/webp");
    expect(long.headers.get("x-cache")).toBe("MISS");
    const short = await call(running.url, "GET", await signed("q_auto,w_40.webp"));
    expect(short.status).toBe(200);
    expect(short.headers.get("x-cache")).toBe("HIT");
    expect(short.bytes).toEqual(long.bytes);
    // The signer writes the short spelling; another level is another variant.
    const written = await variantUrl({
      base: running.url,
      secret: SECRET,
      imageId,
      modifiers: ["q_auto:good", "w_20"],
      ext: "webp",
    });
    expect(written).toMatch(/\/q_auto,w_20\.webp$/);
    expect((await call(running.url, "GET", written)).headers.get("x-cache")).toBe("MISS");
    expect(
      (await call(running.url, "GET", await signed("q_auto:good,w_20.webp"))).headers.get("x-cache"),
    ).toBe("HIT");
    const eco = await call(running.url, "GET", await signed("q_auto:eco,w_40.webp"));
    expect([eco.status, eco.headers.get("x-cache")]).toEqual([200, "MISS"]);
  });

  describe("origin variant URLs", () => {
    let originCanonical: string;
    beforeAll(async () => {
      const url = await originVariantUrl({
        base: running.url,
        secret: SECRET,
        origin: "assets",
        path: "a.png",
        modifiers: ["w_40", "h_20"],
        ext: "webp",
      });
      originCanonical = new URL(url).pathname;
    });

    it("the signer's spelling answers", async () => {
      expect(originCanonical).toMatch(/\/o\/assets\/h_20,w_40\/a\.png\.webp$/);
      const response = await call(running.url, "GET", originCanonical);
      expect([response.status, response.headers.get("content-type")]).toEqual([200, "image/webp"]);
    });

    it.each([
      ["an upper-case extension", (path: string) => path.replace(/\.webp$/, ".WEBP"), "a.png.webp"],
      ["a mixed-case .Jpg", (path: string) => path.replace(/\.webp$/, ".Jpg"), "a.png.jpg"],
      ["a trailing slash", (path: string) => `${path}/`, "without a trailing slash"],
      [
        "a trailing slash after .WEBP",
        (path: string) => `${path.replace(/\.webp$/, ".WEBP")}/`,
        "trailing slash",
      ],
      ["modifiers in another order", (path: string) => path.replace("h_20,w_40", "w_40,h_20"), "h_20,w_40"],
    ])("%s is a 404 naming the spelling", async (_name, respell, named) => {
      const response = await call(running.url, "GET", respell(originCanonical));
      expect(response.status, JSON.stringify(response.json)).toBe(404);
      expect(Object.keys(response.json).sort()).toEqual(ERROR_KEYS);
      expect(response.json.code).toBe("ROUTE_NOT_FOUND");
      expect(response.json.message).toMatch(/one spelling/);
      expect(response.json.message).toContain(named);
    });

    it("an extension that is no output format stays a 422 naming the formats", async () => {
      const response = await call(running.url, "GET", originCanonical.replace(/\.webp$/, ".BMP"));
      expect(response.status, JSON.stringify(response.json)).toBe(422);
      expect(response.json.errors).toEqual([expect.stringMatching(/^path must end with \.jpeg, \.jpg/)]);
    });
  });
});
