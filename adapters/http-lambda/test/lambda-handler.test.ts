import type { HttpRequest, HttpResponse } from "@pixport/http";
import { describe, expect, it } from "vitest";
import { type ApiGatewayV1Event, createLambdaHandler, isBinaryContentType } from "../src/index.js";

/** A neutral handler that records what it received and answers `response`. */
function recorder(response: HttpResponse = { status: 200, headers: {}, body: null }) {
  const seen: HttpRequest[] = [];
  return {
    seen,
    handler: async (request: HttpRequest) => {
      seen.push(request);
      return response;
    },
  };
}

const v1 = (overrides: Partial<ApiGatewayV1Event> = {}): ApiGatewayV1Event => ({
  httpMethod: "GET",
  path: "/v1/images",
  headers: { Host: "api.example.com" },
  multiValueHeaders: null,
  queryStringParameters: null,
  multiValueQueryStringParameters: null,
  body: null,
  isBase64Encoded: false,
  requestContext: { stage: "prod", domainName: "api.example.com", path: "/v1/images" },
  ...overrides,
});

describe("createLambdaHandler translation details", () => {
  it("does not add the stage on a custom domain without a base path", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler)(v1());
    expect(seen[0]?.baseUrl).toBe("https://api.example.com");
  });

  it("keeps a custom domain's base path mapping in the base URL", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler)(
      v1({ requestContext: { stage: "prod", domainName: "api.example.com", path: "/media/v1/images" } }),
    );
    expect(seen[0]?.baseUrl).toBe("https://api.example.com/media");
  });

  it("uses the configured base URL over the event", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler, { baseUrl: "https://cdn.example.com/api/" })(v1());
    expect(seen[0]?.baseUrl).toBe("https://cdn.example.com/api");
  });

  it("passes every value of repeated headers and query parameters", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler)(
      v1({
        multiValueHeaders: { Accept: ["image/png", "image/webp"], "X-Api-Key": ["k"] },
        multiValueQueryStringParameters: { take: ["1", "2"] },
        queryStringParameters: { take: "2" },
      }),
    );
    expect(seen[0]?.headers).toEqual({ accept: ["image/png", "image/webp"], "x-api-key": "k" });
    expect(seen[0]?.query.getAll("take")).toEqual(["1", "2"]);
  });

  it("keeps a header named like an Object.prototype member as a header, never a prototype", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler)(
      // Parsed from JSON, as Lambda's events are: `__proto__` is then an own key of the object.
      v1({
        multiValueHeaders: JSON.parse('{"__proto__": ["a", "b"], "constructor": ["c"], "X-Api-Key": ["k"]}'),
      }),
    );
    const headers = seen[0]?.headers ?? {};
    expect(Object.getPrototypeOf(headers)).toBeNull();
    expect(Object.hasOwn(headers, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(headers, "__proto__")?.value).toEqual(["a", "b"]);
    expect(headers.constructor).toBe("c");
    expect(headers["x-api-key"]).toBe("k");
  });

  it("joins v2 cookies into one Cookie header and decodes a base64 body", async () => {
    const { seen, handler } = recorder();
    await createLambdaHandler(handler)({
      version: "2.0",
      rawPath: "/v1/images/upload",
      rawQueryString: "",
      headers: { "content-type": "application/octet-stream" },
      cookies: ["a=1", "b=2"],
      body: Buffer.from([0, 255, 128]).toString("base64"),
      isBase64Encoded: true,
      requestContext: {
        domainName: "x.lambda-url.eu-west-1.on.aws",
        stage: "$default",
        http: { method: "POST" },
      },
    });
    expect(seen[0]?.headers.cookie).toBe("a=1; b=2");
    expect(Array.from(seen[0]?.body as Uint8Array)).toEqual([0, 255, 128]);
  });

  it("lets the binary predicate be replaced", async () => {
    const response: HttpResponse = {
      status: 200,
      headers: { "Content-Type": "application/json" },
      body: new TextEncoder().encode("{}"),
    };
    const result = await createLambdaHandler(recorder(response).handler, { isBinaryContentType: () => true })(
      v1(),
    );
    expect(result).toMatchObject({ isBase64Encoded: true, body: Buffer.from("{}").toString("base64") });
  });

  it("answers an empty body as an empty string, never base64", async () => {
    const result = await createLambdaHandler(
      recorder({ status: 204, headers: { "Content-Type": "image/png" }, body: null }).handler,
    )(v1());
    expect(result).toMatchObject({ statusCode: 204, body: "", isBase64Encoded: false });
  });

  it("treats text, JSON and XML as text and everything else as binary", () => {
    for (const type of [
      "text/plain",
      "application/json; charset=utf-8",
      "application/problem+json",
      "image/svg+xml",
    ]) {
      expect(isBinaryContentType(type), type).toBe(false);
    }
    for (const type of ["image/png", "image/jpeg", "application/octet-stream", "multipart/form-data"]) {
      expect(isBinaryContentType(type), type).toBe(true);
    }
    expect(isBinaryContentType(undefined)).toBe(false);
  });
});
