import { STATUS_CODES } from "node:http";
import type { HttpBindingRequest, HttpBindingResponse } from "@pixport/testing";
import { expect } from "vitest";
import type { LambdaHttpEvent, LambdaHttpResult } from "../src/index.js";

/** Every event source the binding supports, as a test synthesises it. */
export type EventKind = "rest-v1" | "http-api-v2" | "function-url" | "alb" | "alb-multi-value";

/** Where each synthesised source is mounted, as its clients see it. */
export const EVENT_SOURCES: Record<EventKind, { baseUrl: string; basePath?: string }> = {
  "rest-v1": { baseUrl: "https://abc123.execute-api.eu-west-1.amazonaws.com/prod" },
  "http-api-v2": { baseUrl: "https://def456.execute-api.eu-west-1.amazonaws.com/live" },
  "function-url": { baseUrl: "https://xyz789.lambda-url.eu-west-1.on.aws" },
  alb: { baseUrl: "https://media.example.com/pixport", basePath: "/pixport" },
  "alb-multi-value": { baseUrl: "http://internal-alb-1.eu-west-1.elb.amazonaws.com" },
};

const textual = (type: string | undefined) =>
  type !== undefined && /^(text\/|application\/json)/.test(type.toLowerCase());

/** `Content-Type` → `Content-Type`, as API Gateway REST passes client header names through. */
const titleCase = (name: string) =>
  name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());

/** Builds the event API Gateway, a Function URL or an ALB would hand to Lambda for `request`. */
export function synthesizeEvent(kind: EventKind, request: HttpBindingRequest): LambdaHttpEvent {
  const queryIndex = request.path.indexOf("?");
  const pathname = queryIndex === -1 ? request.path : request.path.slice(0, queryIndex);
  const rawQuery = queryIndex === -1 ? "" : request.path.slice(queryIndex + 1);
  const headers: Record<string, string> = { ...request.headers };
  if (request.body !== undefined) headers["content-length"] = String(request.body.byteLength);
  const contentType = headers["content-type"];
  // REST APIs with binaryMediaTypes "*/*" base64-encode every body; the others only non-text ones.
  const base64 = request.body !== undefined && (kind === "rest-v1" || !textual(contentType));
  const body =
    request.body === undefined ? null : Buffer.from(request.body).toString(base64 ? "base64" : "utf8");
  const decoded = new URLSearchParams(rawQuery);
  const rawPairs =
    rawQuery === ""
      ? []
      : rawQuery.split("&").map((pair) => {
          const [name = "", value = ""] = pair.split("=");
          return [name, value] as const;
        });
  switch (kind) {
    case "rest-v1": {
      const multiValueHeaders: Record<string, string[]> = {};
      for (const [name, value] of Object.entries(headers)) multiValueHeaders[titleCase(name)] = [value];
      const multiQuery: Record<string, string[]> = {};
      for (const [name, value] of decoded) multiQuery[name] = [...(multiQuery[name] ?? []), value];
      return {
        version: "1.0",
        httpMethod: request.method,
        path: pathname,
        headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [titleCase(name), value])),
        multiValueHeaders,
        queryStringParameters: rawQuery === "" ? null : Object.fromEntries(decoded),
        multiValueQueryStringParameters: rawQuery === "" ? null : multiQuery,
        body,
        isBase64Encoded: base64,
        requestContext: {
          stage: "prod",
          domainName: "abc123.execute-api.eu-west-1.amazonaws.com",
          path: `/prod${pathname}`,
        },
      };
    }
    case "http-api-v2":
    case "function-url": {
      const named = kind === "http-api-v2";
      const joined: Record<string, string> = {};
      for (const [name, value] of decoded)
        joined[name] = joined[name] === undefined ? value : `${joined[name]},${value}`;
      return {
        version: "2.0",
        rawPath: named ? `/live${pathname}` : pathname,
        rawQueryString: rawQuery,
        headers,
        ...(rawQuery === "" ? {} : { queryStringParameters: joined }),
        ...(body === null ? {} : { body }),
        isBase64Encoded: base64,
        requestContext: {
          domainName: named
            ? "def456.execute-api.eu-west-1.amazonaws.com"
            : "xyz789.lambda-url.eu-west-1.on.aws",
          stage: named ? "live" : "$default",
          http: { method: request.method },
        },
      } as LambdaHttpEvent;
    }
    case "alb":
      return {
        httpMethod: request.method,
        path: `/pixport${pathname}`,
        headers: { ...headers, host: "media.example.com", "x-forwarded-proto": "https" },
        queryStringParameters: Object.fromEntries(rawPairs),
        body,
        isBase64Encoded: base64,
        requestContext: {
          elb: { targetGroupArn: "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/p/1" },
        },
      };
    case "alb-multi-value": {
      const multiValueHeaders: Record<string, string[]> = {
        host: ["internal-alb-1.eu-west-1.elb.amazonaws.com"],
        "x-forwarded-proto": ["http"],
      };
      for (const [name, value] of Object.entries(headers)) multiValueHeaders[name] = [value];
      const multiQuery: Record<string, string[]> = {};
      for (const [name, value] of rawPairs) multiQuery[name] = [...(multiQuery[name] ?? []), value];
      return {
        httpMethod: request.method,
        path: pathname,
        multiValueHeaders,
        multiValueQueryStringParameters: multiQuery,
        body,
        isBase64Encoded: base64,
        requestContext: {
          elb: { targetGroupArn: "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/p/1" },
        },
      };
    }
  }
}

/**
 * Reads a Lambda result as the client would get it, asserting the shape each source requires on
 * the way (ALB status line, multi-value headers where the request used them, base64 for binary).
 */
export function readResult(kind: EventKind, result: LambdaHttpResult): HttpBindingResponse {
  expect(typeof result.body).toBe("string");
  const multiValue = kind === "rest-v1" || kind === "alb-multi-value";
  const headers: Record<string, string> = {};
  if (multiValue) {
    expect(result.headers).toBeUndefined();
    for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) {
      headers[name.toLowerCase()] = values.join(", ");
    }
  } else {
    expect(result.multiValueHeaders).toBeUndefined();
    for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = value;
  }
  if (kind === "alb" || kind === "alb-multi-value") {
    expect("statusDescription" in result && result.statusDescription).toBe(
      `${result.statusCode} ${STATUS_CODES[result.statusCode]}`,
    );
  }
  const contentType = headers["content-type"];
  if (contentType?.startsWith("image/")) expect(result.isBase64Encoded).toBe(true);
  if (contentType?.startsWith("application/json")) expect(result.isBase64Encoded).toBe(false);
  const body = Buffer.from(result.body, result.isBase64Encoded ? "base64" : "utf8");
  return { status: result.statusCode, headers, body: new Uint8Array(body) };
}
