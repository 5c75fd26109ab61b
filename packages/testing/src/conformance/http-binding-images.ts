/** The upload, authentication and tenancy groups of the HTTP binding suite. */
import { describe, expect, it } from "vitest";
import { solidImage } from "../fixtures/images.js";
import { ERRORS, type HttpSuite, ID, IMAGE_KEYS, uploadForm } from "./http-binding-client.js";

export function describeUpload(suite: HttpSuite): void {
  describe("upload", () => {
    uploadCreates(suite);
    uploadRefuses(suite);
  });
}

function uploadCreates(suite: HttpSuite): void {
  const { call } = suite;
  it("creates an image from a multipart upload with all eight keys in contract order", async () => {
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
      form: uploadForm("halves", suite.png),
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
    expect(response.header("x-image-processing-usage")).toBe("0");
    expect(response.header("x-content-type-options")).toBe("nosniff");
  });

  it("accepts the seed's multipart POST /v1/images and bills live keys one image", async () => {
    const response = await call("POST", "/v1/images", {
      key: suite.liveKey,
      form: uploadForm("seed-form", suite.png),
    });
    expect(response.status).toBe(201);
    expect(response.json.name).toBe("seed-form");
    expect(response.header("x-image-processing-usage")).toBe("1");
  });

  it("detects the format from the bytes, not the file name", async () => {
    const jpeg = await solidImage(20, 10, { r: 10, g: 200, b: 10, alpha: 1 }, "jpeg");
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
      form: uploadForm("x", jpeg, "x.png"),
    });
    expect(response.status).toBe(201);
    expect(response.json.format).toBe("jpeg");
  });

  it("lists every failing field at once: missing name and an SVG file", async () => {
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
      form: uploadForm(undefined, svg, "a.svg"),
    });
    expect(response.status).toBe(422);
    expect(response.json).toMatchObject({
      type: `${ERRORS}validation-error`,
      error: "Validation Error",
      status: 422,
    });
    expect(response.json.message).toBeUndefined();
    expect(response.json.errors).toEqual([
      "name is required",
      "image must be a jpeg, png or webp file (or avif, gif or tiff)",
    ]);
  });
}

function uploadRefuses(suite: HttpSuite): void {
  const { call } = suite;
  it("refuses a name over 30 characters and a missing file", async () => {
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
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
    big.set(suite.png);
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
      form: uploadForm("big", big),
    });
    expect(response.status).toBe(422);
    expect(response.json.errors).toEqual(["image must not be larger than 20MB"]);
  });

  it("refuses truncated image bytes with a 422, storing nothing", async () => {
    const before = await call("GET", "/v1/images?take=100", { key: suite.otherAccountKey });
    const truncated = (await solidImage(300, 300, { r: 1, g: 2, b: 3, alpha: 1 }, "jpeg")).subarray(0, 200);
    const response = await call("POST", "/v1/images/upload", {
      key: suite.otherAccountKey,
      form: uploadForm("t", truncated),
    });
    expect(response.status).toBe(422);
    expect(response.json.errors[0]).toMatch(/^image must be a valid jpeg, png or webp image/);
    const after = await call("GET", "/v1/images?take=100", { key: suite.otherAccountKey });
    expect(after.json.data).toHaveLength(before.json.data.length);
  });

  it("answers a malformed multipart body with 400, not 500", async () => {
    const response = await call("POST", "/v1/images/upload", {
      key: suite.testKey,
      raw: '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nabc',
      contentType: "multipart/form-data; boundary=xyz",
    });
    expect([400, 422]).toContain(response.status);
    expect(response.json.status).toBe(response.status);
  });
}

export function describeAuthentication(suite: HttpSuite): void {
  const { call, upload } = suite;
  describe("authentication and tenancy", () => {
    it("answers 401 with the same body for a missing, malformed and unknown key", async () => {
      const missing = await call("GET", "/v1/images");
      const malformed = await call("GET", "/v1/images", { key: "nope" });
      const unknown = await call("GET", "/v1/images", { key: `test_${"A".repeat(32)}` });
      for (const response of [missing, malformed, unknown]) {
        expect(response.status).toBe(401);
        expect(response.json).toEqual(missing.json);
        expect(response.header("x-image-processing-usage")).toBe("0");
      }
      expect(missing.json).toMatchObject({
        type: `${ERRORS}unauthorized`,
        error: "Unauthorized",
        status: 401,
      });
      expect(typeof missing.json.message).toBe("string");
    });

    it("answers 403 on another account's image and 404 from the other stage of the same account", async () => {
      const image = await upload(suite.testKey, suite.png);
      const foreign = await call("GET", `/v1/images/${image.id}`, { key: suite.otherAccountKey });
      expect(foreign.status).toBe(403);
      expect(foreign.json).toMatchObject({ error: "Forbidden", status: 403 });
      const foreignTransform = await call("POST", `/v1/images/${image.id}/blur`, {
        key: suite.otherAccountKey,
        json: {},
      });
      expect(foreignTransform.status).toBe(403);
      const otherStage = await call("GET", `/v1/images/${image.id}`, { key: suite.liveKey });
      expect(otherStage.status).toBe(404);
      expect(otherStage.json.message).toBe(`Image with id ${image.id} not found.`);
      const list = await call("GET", "/v1/images?take=100", { key: suite.liveKey });
      expect(list.json.data.map((item: { id: string }) => item.id)).not.toContain(image.id);
    });

    it("serves the OpenAPI 3.1 document without a key, with the mount URL as its server", async () => {
      const response = await call("GET", "/v1/openapi.json");
      expect(response.status).toBe(200);
      expect(response.header("x-image-processing-usage")).toBe("0");
      expect(response.json).toMatchObject({ openapi: "3.1.0", info: { version: "1.0.0" } });
      expect(response.json.servers).toEqual([{ url: suite.base }]);
      expect(Object.keys(response.json.paths)).toEqual(
        expect.arrayContaining(["/v1/images", "/v1/images/upload", "/v1/images/{image_id}/download"]),
      );
      expect(response.json.components.securitySchemes.ApiKeyAuth).toMatchObject({
        type: "apiKey",
        in: "header",
        name: "x-api-key",
      });
    });
  });
}
