/** The request-error group of the HTTP binding suite: malformed bodies, bad values, unknown routes. */
import { beforeAll, describe, expect, it } from "vitest";
import { ERRORS, type HttpSuite } from "./http-binding-client.js";

export function describeRequestErrors(suite: HttpSuite): void {
  const { upload } = suite;
  describe("request errors", () => {
    const fixture = { imageId: "" };
    beforeAll(async () => {
      fixture.imageId = (await upload(suite.testKey, suite.png, "errors")).id;
    });

    errorsOfBodies(suite, fixture);
    errorsOfValues(suite, fixture);
    errorsOfRoutes(suite, fixture);
  });
}

function errorsOfBodies(suite: HttpSuite, fixture: { imageId: string }): void {
  const { call } = suite;
  it("answers malformed JSON and an empty JSON body with 400", async () => {
    const malformed = await call("POST", `/v1/images/${fixture.imageId}/blur`, {
      key: suite.testKey,
      raw: "{not json",
      contentType: "application/json",
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json).toMatchObject({
      type: `${ERRORS}bad-request`,
      error: "Bad Request",
      status: 400,
    });
    const empty = await call("POST", `/v1/images/${fixture.imageId}/blur`, {
      key: suite.testKey,
      raw: "",
      contentType: "application/json",
    });
    expect(empty.status).toBe(400);
  });

  it("accepts {} and no body at all where every field is optional", async () => {
    const withEmptyObject = await call("POST", `/v1/images/${fixture.imageId}/blur`, {
      key: suite.testKey,
      json: {},
    });
    expect(withEmptyObject.status).toBe(201);
    const withoutBody = await call("POST", `/v1/images/${fixture.imageId}/blur`, { key: suite.testKey });
    expect(withoutBody.status).toBe(201);
    expect(withoutBody.json.id).not.toBe(fixture.imageId);
  });

  it("lists every failing field of path and body in one 422", async () => {
    const response = await call("POST", `/v1/images/${fixture.imageId}/resize`, {
      key: suite.testKey,
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
      "position must be one of: center, top, right, bottom, left, top-left, top-right, bottom-left, bottom-right, entropy, attention",
      "letterbox_color must be a CSS colour name, #rgb, #rrggbb, #rrggbbaa or transparent",
      "name must be between 1 and 30 characters long",
    ]);
  });
}

function errorsOfValues(suite: HttpSuite, fixture: { imageId: string }): void {
  const { call } = suite;
  it("refuses outputs over 10,000 px and crop boxes outside the image", async () => {
    const resize = await call("POST", `/v1/images/${fixture.imageId}/resize`, {
      key: suite.testKey,
      json: { height: 10000 },
    });
    expect(resize.status).toBe(422);
    expect(resize.json.errors[0]).toMatch(/^height must result in an image of at most 10000 x 10000 pixels/);
    const crop = await call("POST", `/v1/images/${fixture.imageId}/crop`, {
      key: suite.testKey,
      json: { x1: 10, y1: 0, x2: 5, y2: 100 },
    });
    expect(crop.status).toBe(422);
    expect(crop.json.errors).toEqual([
      "x2 must be greater than x1 (10)",
      "y2 must be at most the image height (32)",
    ]);
  });

  it("enforces the SDK's integer rules: crop x1 0.5, modulate hue 120.5, convert quality 101", async () => {
    const crop = await call("POST", `/v1/images/${fixture.imageId}/crop`, {
      key: suite.testKey,
      json: { x1: 0.5, y1: 0, x2: 10, y2: 10 },
    });
    expect(crop.json.errors).toEqual(["x1 must be an integer"]);
    const hue = await call("POST", `/v1/images/${fixture.imageId}/modulate`, {
      key: suite.testKey,
      json: { hue: 120.5 },
    });
    expect(hue.json.errors).toEqual(["hue must be an integer between -360 and 360"]);
    const sdkModulate = await call("POST", `/v1/images/${fixture.imageId}/modulate`, {
      key: suite.testKey,
      json: { brightness: 0.5, saturation: 0.5, hue: 120 },
    });
    expect(sdkModulate.status).toBe(201);
    const quality = await call("POST", `/v1/images/${fixture.imageId}/convert`, {
      key: suite.testKey,
      json: { format: "jpeg", quality: 101 },
    });
    expect(quality.json.errors).toEqual(["quality must be an integer between 1 and 100"]);
    const noAdjustment = await call("POST", `/v1/images/${fixture.imageId}/modulate`, {
      key: suite.testKey,
      json: {},
    });
    expect(noAdjustment.status).toBe(422);
  });

  it("answers a JSON route sent text/plain with 400 and a body that is not an object with 422", async () => {
    const textPlain = await call("POST", `/v1/images/${fixture.imageId}/mirror`, {
      key: suite.testKey,
      raw: "mode=both",
      contentType: "text/plain",
    });
    expect(textPlain.status).toBe(400);
    const array = await call("POST", `/v1/images/${fixture.imageId}/mirror`, {
      key: suite.testKey,
      json: [1, 2],
    });
    expect(array.status).toBe(422);
    expect(array.json.errors).toEqual(["body must be a JSON object"]);
  });
}

function errorsOfRoutes(suite: HttpSuite, fixture: { imageId: string }): void {
  const { call } = suite;
  it("answers a watermark with an unknown overlay id with 404 naming it", async () => {
    const overlayId = "image_qqqqqqqqqqqqqqqqqqqqqqqq";
    const response = await call("POST", `/v1/images/${fixture.imageId}/watermark`, {
      key: suite.testKey,
      json: { watermarks: [{ id: overlayId }] },
    });
    expect(response.status).toBe(404);
    expect(response.json.message).toBe(`Image with id ${overlayId} not found.`);
  });

  it("validates the create-from-URL body, listing every failing field", async () => {
    const invalid = await call("POST", "/v1/images", { key: suite.testKey, json: { url: 3 } });
    expect(invalid.status).toBe(422);
    expect(invalid.json.errors).toEqual(["name is required", "url must be a string"]);
    // A URL outside every allowed origin is refused on `url` before any request is made.
    const foreign = await call("POST", "/v1/images", {
      key: suite.testKey,
      json: { name: "x", url: "https://pixport-conformance.invalid/a.png" },
    });
    expect(foreign.status).toBe(422);
    expect(foreign.json.errors[0]).toMatch(/^url /);
  });

  it("answers unknown routes with a JSON 404 and wrong methods with 405", async () => {
    const unknown = await call("GET", "/v1/nothing", { key: suite.testKey });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({
      status: 404,
      error: "Not Found",
      type: "https://docs.img-processing.com/errors/not-found",
      code: "ROUTE_NOT_FOUND",
    });
    expect(unknown.json.message).toBe("Route GET /v1/nothing not found.");
    const wrongMethod = await call("PUT", `/v1/images/${fixture.imageId}`, { key: suite.testKey });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.header("allow")).toContain("GET");
  });
}
