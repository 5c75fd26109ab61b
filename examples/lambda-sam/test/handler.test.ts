import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ApiGatewayV2Event, LambdaHttpEvent } from "@pixport/http-lambda";
import { Colors, decodeRaw, halvesImage } from "@pixport/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const KEY = `live_${"a".repeat(32)}`;
let dataDir: string;
let handler: (event: LambdaHttpEvent) => Promise<{
  statusCode: number;
  body: string;
  isBase64Encoded: boolean;
  headers?: Record<string, string>;
}>;

/** An HTTP API (payload 2.0) event as API Gateway sends it for the $default stage. */
function event(
  method: string,
  rawPath: string,
  options: { body?: Uint8Array; contentType?: string; key?: string } = {},
): ApiGatewayV2Event {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers["x-api-key"] = options.key;
  if (options.contentType !== undefined) headers["content-type"] = options.contentType;
  if (options.body !== undefined) headers["content-length"] = String(options.body.byteLength);
  return {
    version: "2.0",
    rawPath,
    rawQueryString: "",
    headers,
    ...(options.body === undefined ? {} : { body: Buffer.from(options.body).toString("base64") }),
    isBase64Encoded: options.body !== undefined,
    requestContext: {
      domainName: "abc.execute-api.eu-west-1.amazonaws.com",
      stage: "$default",
      http: { method },
    },
  };
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "pixport-example-lambda-"));
  process.env.PIXPORT_API_KEYS = KEY;
  process.env.PIXPORT_DATA_DIR = dataDir;
  // The module reads its configuration at import, as on a cold start.
  ({ handler } = (await import("../src/handler.js")) as unknown as { handler: typeof handler });
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

describe("example: lambda-sam", () => {
  it("uploads a base64 multipart body and downloads base64 image bytes", async () => {
    const form = new FormData();
    form.append("name", "lambda");
    form.append("image", new Blob([await halvesImage(30, 10, Colors.red, Colors.blue)]), "blob");
    const request = new Request("http://form.invalid/", { method: "POST", body: form });
    const uploaded = await handler(
      event("POST", "/v1/images/upload", {
        key: KEY,
        contentType: request.headers.get("content-type") ?? "",
        body: new Uint8Array(await request.arrayBuffer()),
      }),
    );
    expect(uploaded.statusCode).toBe(201);
    expect(uploaded.isBase64Encoded).toBe(false);
    const image = JSON.parse(uploaded.body) as { id: string };
    const downloaded = await handler(event("GET", `/v1/images/${image.id}/download`, { key: KEY }));
    expect(downloaded.statusCode).toBe(200);
    expect(downloaded.isBase64Encoded).toBe(true);
    const raw = await decodeRaw(new Uint8Array(Buffer.from(downloaded.body, "base64")));
    expect([raw.width, raw.height]).toEqual([30, 10]);
  });

  it("refuses unknown keys and serves the OpenAPI document on the API's URL", async () => {
    expect((await handler(event("GET", "/v1/images", { key: `live_${"b".repeat(32)}` }))).statusCode).toBe(
      401,
    );
    const openapi = await handler(event("GET", "/v1/openapi.json"));
    expect(JSON.parse(openapi.body).servers).toEqual([
      { url: "https://abc.execute-api.eu-west-1.amazonaws.com" },
    ]);
  });

  it("has a SAM template whose handler and entry point match the source", () => {
    const template = readFileSync(new URL("../template.yaml", import.meta.url), "utf8");
    expect(template).toMatch(/^Transform: AWS::Serverless-2016-10-31$/m);
    expect(template).toMatch(/^\s+Handler: handler\.handler$/m);
    expect(template).toMatch(/^\s+- src\/handler\.ts$/m);
    expect(template).toMatch(/^\s+Runtime: nodejs20\.x$/m);
    expect(template).toContain("PIXPORT_API_KEYS: !Ref ApiKeys");
    expect(readFileSync(new URL("../src/handler.ts", import.meta.url), "utf8")).toContain(
      "export async function handler(",
    );
  });
});
