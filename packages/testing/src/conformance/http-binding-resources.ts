/** The get, list, download, delete and publishing groups of the HTTP binding suite. */
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { Colors, decodeRaw, pixelAt, solidImage } from "../fixtures/images.js";
import { ERRORS, type HttpSuite } from "./http-binding-client.js";

export function describeReadAndDelete(suite: HttpSuite): void {
  describe("get, list, delete, download", () => {
    readGetListAndDownload(suite);
    readRoundTripAndDelete(suite);
  });
}

function readGetListAndDownload(suite: HttpSuite): void {
  const { call, upload, current } = suite;
  it("gets an image and 404s an unknown one with the id in the message; 422 for a malformed id", async () => {
    const image = await upload(suite.testKey, suite.png, "getme");
    const got = await call("GET", `/v1/images/${image.id}`, { key: suite.testKey });
    expect(got.status).toBe(200);
    expect(got.json).toEqual(image);
    const unknownId = "image_zzzzzzzzzzzzzzzzzzzzzzzz";
    const missing = await call("GET", `/v1/images/${unknownId}`, { key: suite.testKey });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({
      type: `${ERRORS}not-found`,
      error: "Not Found",
      status: 404,
      message: `Image with id ${unknownId} not found.`,
      code: "IMAGE_NOT_FOUND",
    });
    const malformed = await call("GET", "/v1/images/image_short/download", { key: suite.testKey });
    expect(malformed.status).toBe(422);
    expect(malformed.json.errors).toEqual(["image_id must be a valid image id"]);
  });

  it("lists newest first and walks pages through absolute next/previous links", async () => {
    const key = await current().createKey("live", "lister");
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) ids.push((await upload(key, suite.png, `n${index}`)).id);
    const newestFirst = [...ids].reverse();
    const first = await call("GET", "/v1/images?take=2", { key });
    expect(first.status).toBe(200);
    expect(first.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.json.links.previous).toBeNull();
    expect(first.json.links.next).toBe(`${suite.base}/v1/images?take=2&from=${newestFirst[2]}`);
    const second = await call("GET", first.json.links.next, { key });
    expect(second.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(2, 4));
    expect(second.json.links.previous).toBe(`${suite.base}/v1/images?take=2&from=${newestFirst[0]}`);
    const third = await call("GET", second.json.links.next, { key });
    expect(third.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(4));
    expect(third.json.links.next).toBeNull();
    const defaults = await call("GET", "/v1/images?take=undefined&from=undefined", { key });
    expect(defaults.json.data).toHaveLength(5);
  });

  it("validates take and from", async () => {
    const response = await call("GET", "/v1/images?take=0&from=nope", { key: suite.testKey });
    expect(response.status).toBe(422);
    expect(response.json.errors).toEqual([
      "take must be an integer between 1 and 100",
      "from must be a valid image id",
    ]);
    const unknownCursor = await call("GET", "/v1/images?from=image_zzzzzzzzzzzzzzzzzzzzzzzz", {
      key: suite.testKey,
    });
    expect(unknownCursor.status).toBe(422);
    expect(unknownCursor.json.errors).toEqual(["from must be a valid image id"]);
    const tooMany = await call("GET", "/v1/images?take=101", { key: suite.testKey });
    expect(tooMany.status).toBe(422);
  });

  it("downloads the exact bytes with content type and length", async () => {
    const image = await upload(suite.testKey, suite.png, "dl");
    const response = await call("GET", `/v1/images/${image.id}/download`, { key: suite.testKey });
    expect(response.status).toBe(200);
    expect(response.header("content-type")).toBe("image/png");
    expect(Number(response.header("content-length"))).toBe(image.size);
    expect(response.bytes.byteLength).toBe(image.size);
    expect([...response.bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });
}

function readRoundTripAndDelete(suite: HttpSuite): void {
  const { call, upload } = suite;
  it("round-trips binary bodies both ways: the downloaded pixels are the uploaded ones", async () => {
    // A live key: test keys stamp a visible watermark on every image they produce.
    const image = await upload(suite.liveKey, suite.png, "pixels");
    const response = await call("GET", `/v1/images/${image.id}/download`, { key: suite.liveKey });
    const raw = await decodeRaw(response.bytes);
    expect([raw.width, raw.height]).toEqual([64, 32]);
    expect(pixelAt(raw, 2, 2)).toEqual({ r: 255, g: 0, b: 0, a: 255 });
    expect(pixelAt(raw, 61, 29)).toEqual({ r: 0, g: 0, b: 255, a: 255 });
    // Every byte value survives (no text decoding on the way): a JPEG is full of bytes >= 0x80.
    const jpeg = await solidImage(16, 16, Colors.green, "jpeg");
    const uploaded = await upload(suite.liveKey, jpeg, "jpeg");
    const jpegBack = await call("GET", `/v1/images/${uploaded.id}/download`, { key: suite.liveKey });
    expect(jpegBack.header("content-type")).toBe("image/jpeg");
    expect([...jpegBack.bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    expect((await decodeRaw(jpegBack.bytes)).width).toBe(16);
  });

  it("deletes with 204 and then answers 404 everywhere", async () => {
    const image = await upload(suite.testKey, suite.png, "bye");
    const deleted = await call("DELETE", `/v1/images/${image.id}`, { key: suite.testKey });
    expect(deleted.status).toBe(204);
    expect(deleted.bytes.byteLength).toBe(0);
    expect((await call("DELETE", `/v1/images/${image.id}`, { key: suite.testKey })).status).toBe(404);
    expect((await call("GET", `/v1/images/${image.id}/download`, { key: suite.testKey })).status).toBe(404);
  });
}

export function describePublishing(suite: HttpSuite): void {
  describe("publish and unpublish", () => {
    publishPublicCopies(suite);
    publishVariants(suite);
  });
}

function publishPublicCopies(suite: HttpSuite): void {
  const { call, upload, current } = suite;
  it("publishes at a public URL, idempotently, and takes it down on unpublish", async () => {
    const image = await upload(suite.testKey, suite.png, "pub");
    const published = await call("POST", `/v1/images/${image.id}/publish`, { key: suite.testKey });
    expect(published.status).toBe(201);
    expect(published.json.url).toBe(`${current().publicStorageBaseUrl}/images/${image.id}.png`);
    expect(published.header("x-image-processing-usage")).toBe("0");
    const again = await call("POST", `/v1/images/${image.id}/publish`, { key: suite.testKey });
    expect(again.json.url).toBe(published.json.url);

    const fetchPublic = current().fetchPublic;
    if (fetchPublic !== undefined) {
      const publicCopy = await fetchPublic(published.json.url);
      expect(publicCopy.status).toBe(200);
      expect(publicCopy.headers["content-type"]).toBe("image/png");
      expect(publicCopy.headers["cache-control"]).toContain("max-age=31536000");
      const etag = publicCopy.headers.etag;
      expect(etag).toBeTruthy();
      expect(publicCopy.body.byteLength).toBe(image.size);
      const cached = await fetchPublic(published.json.url, { "if-none-match": etag as string });
      expect(cached.status).toBe(304);
      expect((await fetchPublic(`${current().publicStorageBaseUrl}/images/${image.id}`)).status).toBe(200);
    }

    const unpublished = await call("POST", `/v1/images/${image.id}/unpublish`, { key: suite.testKey });
    expect(unpublished.status).toBe(201);
    expect(unpublished.json.url).toBeNull();
    if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(404);
    expect((await call("POST", `/v1/images/${image.id}/unpublish`, { key: suite.testKey })).status).toBe(201);
    expect((await call("GET", `/v1/images/${image.id}/download`, { key: suite.testKey })).status).toBe(200);
  });
}

function publishVariants(suite: HttpSuite): void {
  const { call, upload, current } = suite;
  it("delivers a variant at a signed URL from signed-url: MISS, HIT, 304, and 404 after delete", async () => {
    const image = await upload(suite.testKey, suite.png, "variant");
    const signed = await call("POST", `/v1/images/${image.id}/signed-url`, {
      key: suite.testKey,
      json: { modifiers: "w_8,fit_fill,h_4", format: "png", expires_in: 600 },
    });
    expect(signed.status, JSON.stringify(signed.json)).toBe(200);
    const base = current().publicStorageBaseUrl;
    expect(signed.json.url.startsWith(`${base}/v/`)).toBe(true);
    const path = signed.json.url.slice(base.length);
    const first = await call("GET", path);
    expect(first.status).toBe(200);
    expect(first.header("content-type")).toBe("image/png");
    expect(first.header("x-cache")).toBe("MISS");
    expect(first.header("x-content-type-options")).toBe("nosniff");
    const metadata = await sharp(first.bytes).metadata();
    expect([metadata.width, metadata.height]).toEqual([8, 4]);
    const second = await call("GET", path);
    expect(second.header("x-cache")).toBe("HIT");
    const etag = second.header("etag")!;
    expect(etag).toBe(first.header("etag"));
    expect((await call("GET", path, { headers: { "if-none-match": etag } })).status).toBe(304);
    const forged = path.replace(
      /\/v\/([^/]+)\//,
      (_match: string, signature: string) => `/v/${signature.split("").reverse().join("")}/`,
    );
    expect((await call("GET", forged)).status).toBe(403);
    expect((await call("DELETE", `/v1/images/${image.id}`, { key: suite.testKey })).status).toBe(204);
    expect((await call("GET", path)).status).toBe(404);
  });

  it("removes the public copy when a published image is deleted", async () => {
    const image = await upload(suite.testKey, suite.png, "pubdel");
    const published = await call("POST", `/v1/images/${image.id}/publish`, { key: suite.testKey });
    expect(published.json.url).toMatch(/^https?:\/\//);
    const fetchPublic = current().fetchPublic;
    if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(200);
    expect((await call("DELETE", `/v1/images/${image.id}`, { key: suite.testKey })).status).toBe(204);
    if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(404);
    expect((await call("GET", `/v1/images/${image.id}`, { key: suite.testKey })).status).toBe(404);
  });
}
