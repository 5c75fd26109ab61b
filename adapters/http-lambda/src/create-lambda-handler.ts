import { STATUS_CODES } from "node:http";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import type { HttpHandler, HttpRequest, HttpResponse } from "@pixport/http";
import { z } from "zod";
import type {
  AlbEvent,
  AlbResult,
  ApiGatewayResult,
  ApiGatewayV1Event,
  ApiGatewayV2Event,
  LambdaHttpEvent,
  LambdaHttpResult,
} from "./events.js";

/** Options of {@link createLambdaHandler} (unknown keys are refused). */
export const lambdaHandlerOptionsSchema = z
  .object({
    /**
     * Absolute URL of the mount point as clients see it (e.g. `https://api.example.com`), used for
     * list links and the OpenAPI `servers`. @default derived from the event: the domain name (or
     * `Host`) plus the stage path of REST APIs and named HTTP API stages.
     */
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * A leading path the events carry that is not part of the route paths, e.g. `/pixport` when an
     * ALB rule or a `/pixport/{proxy+}` resource forwards it. Stripped from the path and kept in the
     * derived base URL. @default none
     */
    basePath: z
      .string()
      .regex(/^(\/[^/?#]+)*\/?$/, 'must be a path such as "/pixport"')
      .default(""),
    /**
     * Whether a response with this `Content-Type` goes out base64-encoded (`isBase64Encoded: true`).
     * @default everything except text, JSON, XML and JavaScript
     */
    isBinaryContentType: z
      .custom<(contentType: string | undefined) => boolean>((value) => typeof value === "function", {
        message: "must be a function (contentType) => boolean",
      })
      .optional(),
  })
  .strict();

/** Options of {@link createLambdaHandler}; see {@link lambdaHandlerOptionsSchema}. */
export type LambdaHandlerOptions = z.input<typeof lambdaHandlerOptionsSchema>;

/** A Lambda handler for API Gateway REST (v1) and HTTP API (v2) events, Function URLs and ALB. */
export type LambdaHttpHandler = (event: LambdaHttpEvent, context?: unknown) => Promise<LambdaHttpResult>;

/** The default binary predicate: everything that is not text-like is sent base64-encoded. */
export function isBinaryContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  return !(
    type.startsWith("text/") ||
    type === "application/json" ||
    type.endsWith("+json") ||
    type === "application/xml" ||
    type.endsWith("+xml") ||
    type === "application/javascript"
  );
}

/**
 * Translates Lambda HTTP events to the neutral handler and back, and nothing else: one small
 * processor per event kind (hono's layout). Request bodies marked `isBase64Encoded` are decoded;
 * binary responses (downloads) are base64-encoded with the flag set; headers and multi-value
 * headers are mapped both ways; ALB results carry their status line.
 *
 * Payloads are capped by Lambda at 6 MB each way: uploads of about 4.4 MB raw at most (base64 adds
 * a third), and large images should be fetched from their published URL (see this package's README).
 *
 * @example
 * ```ts
 * export const handler = createLambdaHandler(createHttpHandler(pipeline));
 * ```
 */
export function createLambdaHandler(
  handler: HttpHandler,
  input: LambdaHandlerOptions = {},
): LambdaHttpHandler {
  if (typeof handler !== "function") {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      "createLambdaHandler needs a handler from createHttpHandler(pipeline) as its first argument.",
    );
  }
  const options = parseOptions(lambdaHandlerOptionsSchema, input, "createLambdaHandler");
  const isBinary = options.isBinaryContentType ?? isBinaryContentType;
  const basePath = options.basePath.replace(/\/+$/, "");
  return async (event) => {
    const processor = processorFor(event);
    const request = processor.toRequest(event as never, basePath);
    if (options.baseUrl !== undefined) request.baseUrl = options.baseUrl.replace(/\/+$/, "");
    const response = await handler(request);
    return processor.toResult(response, event as never, isBinary);
  };
}

interface Processor<E> {
  toRequest(event: E, basePath: string): HttpRequest;
  toResult(
    response: HttpResponse,
    event: E,
    isBinary: (type: string | undefined) => boolean,
  ): LambdaHttpResult;
}

function processorFor(event: LambdaHttpEvent): Processor<never> {
  if ("elb" in (event.requestContext ?? {})) return albProcessor;
  if ("version" in event && event.version === "2.0") return v2Processor;
  return v1Processor;
}

const v1Processor: Processor<ApiGatewayV1Event> = {
  toRequest(event, basePath) {
    const headers = readHeaders(event.headers, event.multiValueHeaders);
    const split = stripBasePath(event.path, basePath);
    const mount = v1Mount(event);
    return {
      method: event.httpMethod.toUpperCase(),
      path: split.path,
      query: decodedQuery(event.queryStringParameters, event.multiValueQueryStringParameters),
      headers,
      body: readBody(event.body, event.isBase64Encoded),
      baseUrl: `${protocolOf(headers, "https")}://${event.requestContext.domainName ?? firstOf(headers.host) ?? "localhost"}${mount}${split.prefix}`,
    };
  },
  toResult(response, event, isBinary) {
    return apiGatewayResult(response, isBinary, event.multiValueHeaders != null);
  },
};

/**
 * The part of the client's path before the resource path: `requestContext.path` is what the client
 * sent, so its prefix is the stage (execute-api host) or a custom domain's base path mapping.
 */
function v1Mount(event: ApiGatewayV1Event): string {
  const clientPath = event.requestContext.path;
  if (clientPath?.endsWith(event.path)) return clientPath.slice(0, clientPath.length - event.path.length);
  const { stage, domainName } = event.requestContext;
  return stage !== undefined && domainName?.endsWith(".amazonaws.com") ? `/${stage}` : "";
}

const v2Processor: Processor<ApiGatewayV2Event> = {
  toRequest(event, basePath) {
    const headers: Record<string, string | string[] | undefined> = readHeaders(event.headers, undefined);
    if (event.cookies !== undefined && event.cookies.length > 0) headers.cookie = event.cookies.join("; ");
    // Named HTTP API stages appear in rawPath; `$default` (and Function URLs) do not.
    const stage = event.requestContext.stage;
    let path = event.rawPath;
    let mount = "";
    if (
      stage !== undefined &&
      stage !== "$default" &&
      (path === `/${stage}` || path.startsWith(`/${stage}/`))
    ) {
      mount = `/${stage}`;
      path = path.slice(mount.length);
    }
    const split = stripBasePath(path, basePath);
    return {
      method: event.requestContext.http.method.toUpperCase(),
      path: split.path,
      query: new URLSearchParams(event.rawQueryString),
      headers,
      body: readBody(event.body ?? null, event.isBase64Encoded),
      baseUrl: `${protocolOf(headers, "https")}://${event.requestContext.domainName}${mount}${split.prefix}`,
    };
  },
  toResult(response, _event, isBinary) {
    return apiGatewayResult(response, isBinary, false);
  },
};

const albProcessor: Processor<AlbEvent> = {
  toRequest(event, basePath) {
    const headers = readHeaders(event.headers, event.multiValueHeaders);
    const split = stripBasePath(event.path, basePath);
    // ALB passes query values exactly as sent (percent-encoded); URLSearchParams decodes them.
    const raw: string[] = [];
    if (event.multiValueQueryStringParameters !== undefined) {
      for (const [name, values] of Object.entries(event.multiValueQueryStringParameters)) {
        for (const value of values ?? []) raw.push(`${name}=${value}`);
      }
    } else {
      for (const [name, value] of Object.entries(event.queryStringParameters ?? {})) {
        if (value !== undefined) raw.push(`${name}=${value}`);
      }
    }
    return {
      method: event.httpMethod.toUpperCase(),
      path: split.path,
      query: new URLSearchParams(raw.join("&")),
      headers,
      body: readBody(event.body, event.isBase64Encoded),
      baseUrl: `${protocolOf(headers, "http")}://${firstOf(headers.host) ?? "localhost"}${split.prefix}`,
    };
  },
  toResult(response, event, isBinary): AlbResult {
    const result = apiGatewayResult(response, isBinary, event.multiValueHeaders !== undefined);
    return {
      ...result,
      statusDescription: `${response.status} ${STATUS_CODES[response.status] ?? ""}`.trim(),
    };
  },
};

/** Lower-cases header names; multi-value headers win (they carry every repeated value). */
function readHeaders(
  single: Record<string, string | undefined> | null | undefined,
  multi: Record<string, string[] | undefined> | null | undefined,
): Record<string, string | string[] | undefined> {
  // Null prototype: a header named `__proto__` is a header like any other, not a prototype.
  const headers: Record<string, string | string[] | undefined> = Object.create(null);
  if (multi != null) {
    for (const [name, values] of Object.entries(multi)) {
      if (values === undefined || values.length === 0) continue;
      headers[name.toLowerCase()] = values.length === 1 ? values[0] : values;
    }
    return headers;
  }
  for (const [name, value] of Object.entries(single ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  return headers;
}

function firstOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function protocolOf(headers: Record<string, string | string[] | undefined>, fallback: string): string {
  const forwarded = firstOf(headers["x-forwarded-proto"])?.split(",")[0]?.trim().toLowerCase();
  return forwarded === "http" || forwarded === "https" ? forwarded : fallback;
}

function decodedQuery(
  single: Record<string, string | undefined> | null | undefined,
  multi: Record<string, string[] | undefined> | null | undefined,
): URLSearchParams {
  const query = new URLSearchParams();
  if (multi != null) {
    for (const [name, values] of Object.entries(multi))
      for (const value of values ?? []) query.append(name, value);
    return query;
  }
  for (const [name, value] of Object.entries(single ?? {}))
    if (value !== undefined) query.append(name, value);
  return query;
}

function stripBasePath(path: string, basePath: string): { path: string; prefix: string } {
  if (basePath !== "" && (path === basePath || path.startsWith(`${basePath}/`))) {
    return { path: path.slice(basePath.length) || "/", prefix: basePath };
  }
  return { path, prefix: "" };
}

function readBody(body: string | null, isBase64Encoded: boolean): Uint8Array | null {
  if (body === null || body === "") return null;
  const buffer = Buffer.from(body, isBase64Encoded ? "base64" : "utf8");
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

function apiGatewayResult(
  response: HttpResponse,
  isBinary: (type: string | undefined) => boolean,
  multiValue: boolean,
): ApiGatewayResult {
  const contentType = Object.entries(response.headers).find(
    ([name]) => name.toLowerCase() === "content-type",
  )?.[1];
  const binary = response.body !== null && isBinary(contentType);
  const body =
    response.body === null
      ? ""
      : Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength).toString(
          binary ? "base64" : "utf8",
        );
  const result: ApiGatewayResult = { statusCode: response.status, body, isBase64Encoded: binary };
  if (multiValue) {
    result.multiValueHeaders = Object.fromEntries(
      Object.entries(response.headers).map(([name, value]) => [name, [value]]),
    );
  } else {
    result.headers = { ...response.headers };
  }
  return result;
}
