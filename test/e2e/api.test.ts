import type { PixportServer } from "@pixport/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CODECS,
  call,
  halves,
  ID,
  IMAGE_KEYS,
  newKey,
  removeDir,
  solid,
  startServer,
  tempDataDir,
  upload,
  uploadForm,
} from "./harness.js";

let server: PixportServer;
let dataDir: string;
let base: string;
let testKey: string;
let liveKey: string;
let otherAccountKey: string;
let png: Uint8Array;

describe.each(CODECS)("%s codec", (codec) => {
  beforeAll(async () => {
    dataDir = await tempDataDir();
    server = await startServer(dataDir, { codec });
    base = server.url;
    testKey = await newKey(server, "test", "acme");
    liveKey = await newKey(server, "live", "acme");
    otherAccountKey = await newKey(server, "test", "globex");
    png = await halves(64, 32, [255, 0, 0], [0, 0, 255]);
  });

  afterAll(async () => {
    await server.close();
    await removeDir(dataDir);
  });

  describe("upload", () => {
    it("creates an image from a multipart upload with all eight keys in contract order", async () => {
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        form: uploadForm("halves", png),
      });
      expect(response.status).toBe(201);
      expect(Object.keys(response.json)).toEqual(IMAGE_KEYS);
      expect(response.json).toMatchObject({
        name: "halves",
        url: null,
        width: 64,
        height: 32,
        format: "png",
      });
      expect(response.json.id).toMatch(ID);
      expect(response.json.size).toBeGreaterThan(0);
      expect(new Date(response.json.created_at).toISOString()).toBe(response.json.created_at);
      expect(response.headers.get("x-image-processing-usage")).toBe("0");
    });

    it("accepts the seed's multipart POST /v1/images and bills live keys one image", async () => {
      const response = await call(base, "POST", "/v1/images", {
        key: liveKey,
        form: uploadForm("seed-form", png),
      });
      expect(response.status).toBe(201);
      expect(response.json.name).toBe("seed-form");
      expect(response.headers.get("x-image-processing-usage")).toBe("1");
    });

    it("detects the format from the bytes, not the file name", async () => {
      const jpeg = await solid(20, 10, [10, 200, 10], "jpeg");
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        form: uploadForm("x", jpeg, "x.png"),
      });
      expect(response.status).toBe(201);
      expect(response.json.format).toBe("jpeg");
    });

    it("lists every failing field at once: missing name and an SVG file", async () => {
      const svg = new TextEncoder().encode(
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
      );
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        form: uploadForm(undefined, svg, "a.svg"),
      });
      expect(response.status).toBe(422);
      expect(response.json).toMatchObject({
        type: "https://docs.img-processing.com/errors/validation-error",
        error: "Validation Error",
        status: 422,
      });
      expect(response.json.message).toBeUndefined();
      expect(response.json.errors).toEqual(["name is required", "image must be a jpeg, png or webp file"]);
    });

    it("refuses a name over 30 characters and a missing file", async () => {
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        form: uploadForm("x".repeat(31), undefined),
      });
      expect(response.status).toBe(422);
      expect(response.json.errors).toEqual([
        "name must be between 1 and 30 characters long",
        "image is required",
      ]);
    });

    it("refuses a file over 20 MB with a 422 naming image, never truncating it", async () => {
      const big = new Uint8Array(20 * 1024 * 1024 + 10);
      big.set(png);
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        form: uploadForm("big", big),
      });
      expect(response.status).toBe(422);
      expect(response.json.errors).toEqual(["image must not be larger than 20MB"]);
    });

    it("refuses truncated image bytes with a 422, storing nothing", async () => {
      const before = await call(base, "GET", "/v1/images?take=100", { key: otherAccountKey });
      const truncated = (await solid(300, 300, [1, 2, 3], "jpeg")).subarray(0, 200);
      const response = await call(base, "POST", "/v1/images/upload", {
        key: otherAccountKey,
        form: uploadForm("t", truncated),
      });
      expect(response.status).toBe(422);
      expect(response.json.errors[0]).toMatch(/^image must be a valid jpeg, png or webp image/);
      const after = await call(base, "GET", "/v1/images?take=100", { key: otherAccountKey });
      expect(after.json.data).toHaveLength(before.json.data.length);
    });

    it("answers a malformed multipart body with 400, not 500", async () => {
      const response = await call(base, "POST", "/v1/images/upload", {
        key: testKey,
        raw: '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nabc',
        contentType: "multipart/form-data; boundary=xyz",
      });
      expect([400, 422]).toContain(response.status);
      expect(response.json.status).toBe(response.status);
    });
  });

  describe("authentication and tenancy", () => {
    it("answers 401 with the same body for a missing, malformed and unknown key", async () => {
      const missing = await call(base, "GET", "/v1/images");
      const malformed = await call(base, "GET", "/v1/images", { key: "nope" });
      const unknown = await call(base, "GET", "/v1/images", { key: `test_${"A".repeat(32)}` });
      for (const response of [missing, malformed, unknown]) {
        expect(response.status).toBe(401);
        expect(response.json).toEqual(missing.json);
        expect(response.headers.get("x-image-processing-usage")).toBe("0");
      }
      expect(missing.json).toMatchObject({
        type: "https://docs.img-processing.com/errors/unauthorized",
        error: "Unauthorized",
        status: 401,
      });
      expect(typeof missing.json.message).toBe("string");
    });

    it("answers 403 on another account's image and 404 from the other stage of the same account", async () => {
      const image = await upload(base, testKey, png);
      const foreign = await call(base, "GET", `/v1/images/${image.id}`, { key: otherAccountKey });
      expect(foreign.status).toBe(403);
      expect(foreign.json).toMatchObject({ error: "Forbidden", status: 403 });
      const foreignTransform = await call(base, "POST", `/v1/images/${image.id}/blur`, {
        key: otherAccountKey,
        json: {},
      });
      expect(foreignTransform.status).toBe(403);
      const otherStage = await call(base, "GET", `/v1/images/${image.id}`, { key: liveKey });
      expect(otherStage.status).toBe(404);
      expect(otherStage.json.message).toBe(`Image with id ${image.id} not found.`);
      const list = await call(base, "GET", "/v1/images?take=100", { key: liveKey });
      expect(list.json.data.map((item: { id: string }) => item.id)).not.toContain(image.id);
    });
  });

  describe("get, list, delete, download", () => {
    it("gets an image and 404s an unknown one with the id in the message; 422 for a malformed id", async () => {
      const image = await upload(base, testKey, png, "getme");
      const got = await call(base, "GET", `/v1/images/${image.id}`, { key: testKey });
      expect(got.status).toBe(200);
      expect(got.json).toEqual(image);
      const unknownId = "image_zzzzzzzzzzzzzzzzzzzzzzzz";
      const missing = await call(base, "GET", `/v1/images/${unknownId}`, { key: testKey });
      expect(missing.status).toBe(404);
      expect(missing.json).toEqual({
        type: "https://docs.img-processing.com/errors/not-found",
        error: "Not Found",
        status: 404,
        message: `Image with id ${unknownId} not found.`,
        code: "IMAGE_NOT_FOUND",
      });
      const malformed = await call(base, "GET", "/v1/images/image_short/download", { key: testKey });
      expect(malformed.status).toBe(422);
      expect(malformed.json.errors).toEqual(["image_id must be a valid image id"]);
    });

    it("lists newest first and walks pages through absolute next/previous links", async () => {
      const key = await newKey(server, "live", "lister");
      const ids: string[] = [];
      for (let index = 0; index < 5; index++) ids.push((await upload(base, key, png, `n${index}`)).id);
      const newestFirst = [...ids].reverse();
      const first = await call(base, "GET", "/v1/images?take=2", { key });
      expect(first.status).toBe(200);
      expect(first.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(0, 2));
      expect(first.json.links.previous).toBeNull();
      expect(first.json.links.next).toBe(`${base}/v1/images?take=2&from=${newestFirst[2]}`);
      const second = await call(base, "GET", first.json.links.next, { key });
      expect(second.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(2, 4));
      expect(second.json.links.previous).toBe(`${base}/v1/images?take=2&from=${newestFirst[0]}`);
      const third = await call(base, "GET", second.json.links.next, { key });
      expect(third.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(4));
      expect(third.json.links.next).toBeNull();
      const defaults = await call(base, "GET", "/v1/images?take=undefined&from=undefined", { key });
      expect(defaults.json.data).toHaveLength(5);
    });

    it("validates take and from", async () => {
      const response = await call(base, "GET", "/v1/images?take=0&from=nope", { key: testKey });
      expect(response.status).toBe(422);
      expect(response.json.errors).toEqual([
        "take must be an integer between 1 and 100",
        "from must be a valid image id",
      ]);
      const unknownCursor = await call(base, "GET", "/v1/images?from=image_zzzzzzzzzzzzzzzzzzzzzzzz", {
        key: testKey,
      });
      expect(unknownCursor.status).toBe(422);
      expect(unknownCursor.json.errors).toEqual(["from must be a valid image id"]);
      const tooMany = await call(base, "GET", "/v1/images?take=101", { key: testKey });
      expect(tooMany.status).toBe(422);
    });

    it("downloads the exact bytes with content type and length", async () => {
      const image = await upload(base, testKey, png, "dl");
      const response = await call(base, "GET", `/v1/images/${image.id}/download`, { key: testKey });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("image/png");
      expect(Number(response.headers.get("content-length"))).toBe(image.size);
      expect([...response.bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    });

    it("deletes with 204 and then answers 404 everywhere", async () => {
      const image = await upload(base, testKey, png, "bye");
      const deleted = await call(base, "DELETE", `/v1/images/${image.id}`, { key: testKey });
      expect(deleted.status).toBe(204);
      expect(deleted.bytes.byteLength).toBe(0);
      expect((await call(base, "DELETE", `/v1/images/${image.id}`, { key: testKey })).status).toBe(404);
      expect((await call(base, "GET", `/v1/images/${image.id}/download`, { key: testKey })).status).toBe(404);
    });
  });

  describe("publish and unpublish", () => {
    it("publishes at a public URL served without a key, idempotently, and takes it down on unpublish", async () => {
      const image = await upload(base, testKey, png, "pub");
      const published = await call(base, "POST", `/v1/images/${image.id}/publish`, { key: testKey });
      expect(published.status).toBe(201);
      expect(published.json.url).toBe(`${base}/images/${image.id}.png`);
      expect(published.headers.get("x-image-processing-usage")).toBe("0");
      const again = await call(base, "POST", `/v1/images/${image.id}/publish`, { key: testKey });
      expect(again.json.url).toBe(published.json.url);

      const publicCopy = await fetch(published.json.url);
      expect(publicCopy.status).toBe(200);
      expect(publicCopy.headers.get("content-type")).toBe("image/png");
      expect(publicCopy.headers.get("cache-control")).toContain("max-age=31536000");
      const etag = publicCopy.headers.get("etag");
      expect(etag).toBeTruthy();
      expect(new Uint8Array(await publicCopy.arrayBuffer()).byteLength).toBe(image.size);
      const cached = await fetch(published.json.url, { headers: { "if-none-match": etag! } });
      expect(cached.status).toBe(304);
      expect((await fetch(`${base}/images/${image.id}`)).status).toBe(200);

      const unpublished = await call(base, "POST", `/v1/images/${image.id}/unpublish`, { key: testKey });
      expect(unpublished.status).toBe(201);
      expect(unpublished.json.url).toBeNull();
      expect((await fetch(published.json.url)).status).toBe(404);
      expect((await call(base, "POST", `/v1/images/${image.id}/unpublish`, { key: testKey })).status).toBe(
        201,
      );
      expect((await call(base, "GET", `/v1/images/${image.id}/download`, { key: testKey })).status).toBe(200);
    });

    it("removes the public copy when a published image is deleted", async () => {
      const image = await upload(base, testKey, png, "pubdel");
      const published = await call(base, "POST", `/v1/images/${image.id}/publish`, { key: testKey });
      expect((await fetch(published.json.url)).status).toBe(200);
      expect((await call(base, "DELETE", `/v1/images/${image.id}`, { key: testKey })).status).toBe(204);
      expect((await fetch(published.json.url)).status).toBe(404);
    });
  });

  describe("request errors", () => {
    let imageId: string;
    beforeAll(async () => {
      imageId = (await upload(base, testKey, png, "errors")).id;
    });

    it("answers malformed JSON and an empty JSON body with 400", async () => {
      const malformed = await call(base, "POST", `/v1/images/${imageId}/blur`, {
        key: testKey,
        raw: "{not json",
        contentType: "application/json",
      });
      expect(malformed.status).toBe(400);
      expect(malformed.json).toMatchObject({
        type: "https://docs.img-processing.com/errors/bad-request",
        error: "Bad Request",
        status: 400,
      });
      const empty = await call(base, "POST", `/v1/images/${imageId}/blur`, {
        key: testKey,
        raw: "",
        contentType: "application/json",
      });
      expect(empty.status).toBe(400);
    });

    it("accepts {} and no body at all where every field is optional", async () => {
      const withEmptyObject = await call(base, "POST", `/v1/images/${imageId}/blur`, {
        key: testKey,
        json: {},
      });
      expect(withEmptyObject.status).toBe(201);
      const withoutBody = await call(base, "POST", `/v1/images/${imageId}/blur`, { key: testKey });
      expect(withoutBody.status).toBe(201);
      expect(withoutBody.json.id).not.toBe(imageId);
    });

    it("lists every failing field of path and body in one 422", async () => {
      const response = await call(base, "POST", `/v1/images/${imageId}/resize`, {
        key: testKey,
        json: {
          width: 0,
          height: 20.5,
          fit: "stretch",
          position: "middle",
          letterbox_color: "nope",
          name: "",
        },
      });
      expect(response.status).toBe(422);
      expect(response.json.errors).toEqual([
        "width must be an integer between 1 and 10000",
        "height must be an integer between 1 and 10000",
        "fit must be one of: fill, contain, cover",
        "position must be one of: center, top, right, bottom, left, top-left, top-right, bottom-left, bottom-right",
        "letterbox_color must be a CSS colour name, #rgb, #rrggbb, #rrggbbaa or transparent",
        "name must be between 1 and 30 characters long",
      ]);
    });

    it("refuses outputs over 10,000 px and crop boxes outside the image", async () => {
      const resize = await call(base, "POST", `/v1/images/${imageId}/resize`, {
        key: testKey,
        json: { height: 10000 },
      });
      expect(resize.status).toBe(422);
      expect(resize.json.errors[0]).toMatch(
        /^height must result in an image of at most 10000 x 10000 pixels/,
      );
      const crop = await call(base, "POST", `/v1/images/${imageId}/crop`, {
        key: testKey,
        json: { x1: 10, y1: 0, x2: 5, y2: 100 },
      });
      expect(crop.status).toBe(422);
      expect(crop.json.errors).toEqual([
        "x2 must be greater than x1 (10)",
        "y2 must be at most the image height (32)",
      ]);
    });

    it("enforces the SDK's integer rules: crop x1 0.5, modulate hue 120.5, convert quality 101", async () => {
      const crop = await call(base, "POST", `/v1/images/${imageId}/crop`, {
        key: testKey,
        json: { x1: 0.5, y1: 0, x2: 10, y2: 10 },
      });
      expect(crop.json.errors).toEqual(["x1 must be an integer"]);
      const hue = await call(base, "POST", `/v1/images/${imageId}/modulate`, {
        key: testKey,
        json: { hue: 120.5 },
      });
      expect(hue.json.errors).toEqual(["hue must be an integer between -360 and 360"]);
      const sdkModulate = await call(base, "POST", `/v1/images/${imageId}/modulate`, {
        key: testKey,
        json: { brightness: 0.5, saturation: 0.5, hue: 120 },
      });
      expect(sdkModulate.status).toBe(201);
      const quality = await call(base, "POST", `/v1/images/${imageId}/convert`, {
        key: testKey,
        json: { format: "jpeg", quality: 101 },
      });
      expect(quality.json.errors).toEqual(["quality must be an integer between 1 and 100"]);
      const noAdjustment = await call(base, "POST", `/v1/images/${imageId}/modulate`, {
        key: testKey,
        json: {},
      });
      expect(noAdjustment.status).toBe(422);
    });

    it("answers a JSON route sent text/plain with 400 and a body that is not an object with 422", async () => {
      const textPlain = await call(base, "POST", `/v1/images/${imageId}/mirror`, {
        key: testKey,
        raw: "mode=both",
        contentType: "text/plain",
      });
      expect(textPlain.status).toBe(400);
      const array = await call(base, "POST", `/v1/images/${imageId}/mirror`, { key: testKey, json: [1, 2] });
      expect(array.status).toBe(422);
      expect(array.json.errors).toEqual(["body must be a JSON object"]);
    });

    it("answers a watermark with an unknown overlay id with 404 naming it", async () => {
      const overlayId = "image_qqqqqqqqqqqqqqqqqqqqqqqq";
      const response = await call(base, "POST", `/v1/images/${imageId}/watermark`, {
        key: testKey,
        json: { watermarks: [{ id: overlayId }] },
      });
      expect(response.status).toBe(404);
      expect(response.json.message).toBe(`Image with id ${overlayId} not found.`);
    });

    it("validates create-from-URL bodies and refuses origins off the allow-list with a 422 on url", async () => {
      // Fetching itself is covered by test/e2e/url-import.test.ts against local HTTPS servers.
      const invalid = await call(base, "POST", "/v1/images", { key: testKey, json: { url: 3 } });
      expect(invalid.status).toBe(422);
      expect(invalid.json.errors).toEqual(["name is required", "url must be a string"]);
      const offList = await call(base, "POST", "/v1/images", {
        key: testKey,
        json: { name: "x", url: "https://example.com/a.png" },
      });
      expect(offList.status).toBe(422);
      expect(offList.json.errors).toEqual(["url must be a URL from an allowed origin"]);
    });

    it("answers unknown routes with a JSON 404 and wrong methods with 405", async () => {
      const unknown = await call(base, "GET", "/v1/nothing", { key: testKey });
      expect(unknown.status).toBe(404);
      expect(unknown.json.status).toBe(404);
      const wrongMethod = await call(base, "PUT", `/v1/images/${imageId}`, { key: testKey });
      expect(wrongMethod.status).toBe(405);
      expect(wrongMethod.headers.get("allow")).toContain("GET");
    });
  });
});
