import { readFileSync } from "node:fs";
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  generateApiKey,
  hashApiKey,
  type ImagePipeline,
} from "@pixport/core";
import { Validator } from "@seriousme/openapi-schema-validator";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createHttpHandler,
  createOpenApiDocument,
  defaultRoutes,
  type HttpHandler,
  type HttpRequest,
  imageListSchema,
  imageSchema,
  messageErrorSchema,
  type Route,
  validationErrorSchema,
} from "../src/index.js";
import { renderOpenApiFile } from "../src/openapi-file.js";

const committedPath = new URL("../openapi.json", import.meta.url);

type Operation = {
  operationId: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, unknown>;
  security?: unknown[];
};

describe("the committed OpenAPI document", () => {
  it("is exactly what the route table generates (run `pnpm openapi` after changing a route)", () => {
    const committed = readFileSync(committedPath, "utf8");
    expect(committed, "packages/http/openapi.json is stale: run `pnpm openapi`").toBe(renderOpenApiFile());
  });

  it("is a valid OpenAPI 3.1 document whose references all resolve", async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(readFileSync(committedPath, "utf8")));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    // Throws on a dangling $ref.
    expect(() => validator.resolveRefs()).not.toThrow();
  });

  it("has info.version 1.0.0, the ApiKeyAuth scheme on x-api-key and both error shapes", () => {
    const document = createOpenApiDocument(defaultRoutes);
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.version).toBe("1.0.0");
    expect(document.security).toEqual([{ ApiKeyAuth: [] }]);
    expect(document.components.securitySchemes).toEqual({
      ApiKeyAuth: expect.objectContaining({ type: "apiKey", in: "header", name: "x-api-key" }),
    });
    const schemas = document.components.schemas as Record<string, { required?: string[] }>;
    expect(schemas.MessageError?.required).toEqual(["type", "error", "status", "message"]);
    expect(schemas.ValidationError?.required).toEqual(["type", "error", "status", "errors"]);
    expect(schemas.Image?.required).toEqual([
      "id",
      "name",
      "url",
      "width",
      "height",
      "format",
      "size",
      "created_at",
    ]);
  });

  it("documents every route of the table with its parameters, body media types and statuses", () => {
    const document = createOpenApiDocument(defaultRoutes);
    const operations = new Set<string>();
    for (const route of defaultRoutes) {
      const operation = document.paths[route.path]?.[route.method.toLowerCase()] as Operation | undefined;
      expect(operation, `${route.method} ${route.path}`).toBeDefined();
      if (operation === undefined) continue;
      operations.add(operation.operationId);
      expect(Object.keys(operation.responses)).toContain(String(route.successStatus));
      const pathNames = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]);
      expect(operation.parameters?.filter((p) => p.in === "path").map((p) => p.name) ?? []).toEqual(
        pathNames,
      );
      if (route.querySchema !== undefined) {
        expect(operation.parameters?.some((parameter) => parameter.in === "query")).toBe(true);
      }
      const mediaType = { json: "application/json", multipart: "multipart/form-data", none: undefined }[
        route.body
      ];
      if (mediaType === undefined) expect(operation.requestBody).toBeUndefined();
      else expect(Object.keys(operation.requestBody?.content ?? {})).toContain(mediaType);
      if (route.auth) {
        expect(operation.security).toBeUndefined();
        expect(Object.keys(operation.responses)).toContain("401");
      } else {
        expect(operation.security).toEqual([]);
      }
    }
    // Two routes upload (`/v1/images/upload` and multipart `/v1/images`): operation ids stay unique.
    const count = Object.values(document.paths).reduce((sum, item) => sum + Object.keys(item).length, 0);
    expect(operations.size).toBe(count);
    expect(document.paths["/v1/openapi.json"]?.get).toBeDefined();
    expect(
      Object.keys(
        (document.paths["/v1/images"]?.post as Operation | undefined)?.requestBody?.content ?? {},
      ).sort(),
    ).toEqual(["application/json", "multipart/form-data"]);
  });

  it("follows a new route without any hand edit (generated, not copied)", () => {
    const extra: Route = {
      operationId: "pingImage",
      method: "POST",
      path: "/v1/images/{image_id}/ping",
      summary: "Ping.",
      auth: true,
      body: "json",
      successStatus: 201,
      invoke: async () => ({ kind: "empty", status: 201 }),
    };
    const document = createOpenApiDocument([...defaultRoutes, extra], { serverUrl: "https://x.test/p" });
    expect(document.servers).toEqual([{ url: "https://x.test/p" }]);
    const operation = document.paths["/v1/images/{image_id}/ping"]?.post as Operation;
    expect(operation.operationId).toBe("pingImage");
    // A path parameter without a schema is still declared, as OpenAPI requires.
    expect(operation.parameters).toEqual([
      { name: "image_id", in: "path", required: true, schema: { type: "string" } },
    ]);
  });
});

describe("GET /v1/openapi.json and the response schemas against real responses", () => {
  let pipeline: ImagePipeline;
  let handler: HttpHandler;
  let key: string;
  const request = (method: string, path: string, extra: Partial<HttpRequest> = {}): HttpRequest => {
    const [pathname = "", search = ""] = path.split("?");
    return {
      method,
      path: pathname,
      query: new URLSearchParams(search),
      headers: { "x-api-key": key },
      body: null,
      baseUrl: "https://api.test/mount",
      ...extra,
    };
  };
  const json = (body: Uint8Array | null) => JSON.parse(new TextDecoder().decode(body ?? new Uint8Array()));

  beforeAll(async () => {
    const keys = createMemoryKeyStore();
    key = generateApiKey("live");
    await keys.insert({
      id: "key_o",
      hash: await hashApiKey(key),
      displayPrefix: "live_o",
      kind: "live",
      accountId: "a",
      createdAt: new Date().toISOString(),
    });
    const blobStore = createMemoryBlobStore();
    pipeline = createImagePipeline({
      codec: createSharpCodec(),
      blobStore,
      images: createMemoryImageRepository(),
      keys,
      publisher: createBlobStorePublisher({
        source: blobStore,
        target: createMemoryBlobStore(),
        publicBaseUrl: "https://cdn.test",
      }),
    });
    handler = createHttpHandler(pipeline);
  });

  it("serves the committed document without a key, with the mount URL as its server", async () => {
    const response = await handler(request("GET", "/v1/openapi.json", { headers: {} }));
    expect(response.status).toBe(200);
    expect(response.headers["X-Image-Processing-Usage"]).toBe("0");
    const served = json(response.body);
    const { servers, ...rest } = served;
    expect(servers).toEqual([{ url: "https://api.test/mount" }]);
    expect(rest).toEqual(JSON.parse(readFileSync(committedPath, "utf8")));
    // A wrong key does not matter on a public route.
    const withBadKey = await handler(
      request("GET", "/v1/openapi.json", { headers: { "x-api-key": "nope" } }),
    );
    expect(withBadKey.status).toBe(200);
  });

  it("documents the headers real responses carry: rate limits, Retry-After and the configured usage header", async () => {
    const renamed = createHttpHandler(pipeline, { usageHeaderName: "X-Acme-Usage" });
    const served = json((await renamed(request("GET", "/v1/openapi.json", { headers: {} }))).body);
    const list = served.paths["/v1/images"].get.responses;
    expect(Object.keys(list["200"].headers).sort()).toEqual(
      ["X-Acme-Usage", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"].sort(),
    );
    expect(JSON.stringify(served)).not.toContain("X-Image-Processing-Usage");
    // Every header a real authenticated answer carries is declared on its documented response.
    const real = await renamed(request("GET", "/v1/images"));
    expect(real.status).toBe(200);
    for (const name of ["X-Acme-Usage", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]) {
      expect(real.headers[name], name).toMatch(/^[0-9]+$/);
    }
    const { responses } = served.components;
    expect(Object.keys(responses.TooManyRequests.headers)).toEqual(
      expect.arrayContaining([
        "Retry-After",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
      ]),
    );
    expect(Object.keys(responses.InternalError.headers)).toContain("Retry-After");
    // The public document route itself is not rate limited.
    expect(Object.keys(served.paths["/v1/openapi.json"].get.responses["200"].headers)).toEqual([
      "X-Acme-Usage",
    ]);
  });

  it("still requires a key on every other route", async () => {
    const response = await handler(request("GET", "/v1/images", { headers: {} }));
    expect(response.status).toBe(401);
    expect(messageErrorSchema.safeParse(json(response.body)).success).toBe(true);
  });

  it("answers a route with auth: false that reads the caller with a generic 500, not a crash", async () => {
    const broken: Route = {
      operationId: "broken",
      method: "GET",
      path: "/v1/broken",
      summary: "Reads the caller without auth.",
      auth: false,
      body: "none",
      successStatus: 200,
      invoke: async (context) => ({ kind: "json", status: 200, body: context.caller }),
    };
    const errors: unknown[] = [];
    const custom = createHttpHandler(pipeline, {
      routes: [broken],
      logger: { error: (_message, context) => errors.push(context) },
    });
    const response = await custom(request("GET", "/v1/broken", { headers: {} }));
    expect(response.status).toBe(500);
    expect(errors).toHaveLength(1);
  });

  it("describes the real Image, list and both error bodies", async () => {
    const png = await sharp({ create: { width: 8, height: 4, channels: 3, background: "red" } })
      .png()
      .toBuffer();
    const form = new Request("http://x/", {
      method: "POST",
      body: (() => {
        const data = new FormData();
        data.append("name", "schema");
        data.append("image", new Blob([new Uint8Array(png)]), "blob");
        return data;
      })(),
    });
    const uploaded = await handler(
      request("POST", "/v1/images/upload", {
        headers: { "x-api-key": key, "content-type": form.headers.get("content-type") ?? "" },
        body: new Uint8Array(await form.arrayBuffer()),
      }),
    );
    expect(uploaded.status).toBe(201);
    expect(imageSchema.strict().parse(json(uploaded.body))).toMatchObject({ width: 8, height: 4 });
    const published = await handler(request("POST", `/v1/images/${json(uploaded.body).id}/publish`));
    expect(imageSchema.parse(json(published.body)).url).toMatch(/^https:\/\/cdn\.test\//);
    const list = await handler(request("GET", "/v1/images?take=1"));
    expect(imageListSchema.strict().parse(json(list.body)).data).toHaveLength(1);
    const invalid = await handler(request("GET", "/v1/images?take=0"));
    expect(invalid.status).toBe(422);
    expect(validationErrorSchema.strict().parse(json(invalid.body)).errors).toEqual([
      "take must be an integer between 1 and 100",
    ]);
    const missing = await handler(request("GET", "/v1/images/image_zzzzzzzzzzzzzzzzzzzzzzzz"));
    expect(messageErrorSchema.strict().parse(json(missing.body)).status).toBe(404);
  });
});
