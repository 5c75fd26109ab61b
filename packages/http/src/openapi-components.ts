import type { Route } from "./routes/route.js";

// The parts of the OpenAPI document shared by every operation: error responses, headers, security.

type JsonObject = Record<string, unknown>;

export const SCHEMA_REF = "#/components/schemas/";

/** Error responses shared by every operation, keyed by status (contract section 2.2). */
export const ERROR_RESPONSES = {
  "400": ["BadRequest", "Malformed or empty JSON, a wrong content type, or a malformed multipart body."],
  "401": ["Unauthorized", "The `x-api-key` header is missing or the key is unknown."],
  "403": [
    "Forbidden",
    "The key may not do this: another account's image, a feature test keys lack, or the quota is used up.",
  ],
  "404": ["NotFound", "No image with that id for this key's stage, or no such route."],
  "422": ["ValidationFailed", "The path, query or body failed validation; every failing field is listed."],
  "429": ["TooManyRequests", "The key's rate limit is exceeded; retry after `Retry-After` seconds."],
  "5XX": [
    "InternalError",
    "An unexpected failure (500); or a 503 with `Retry-After` and its cause in `code`: the server starting (`STARTING`), a storage or model outage (`STORAGE_UNAVAILABLE`, `MODEL_UNAVAILABLE`), the node or its OCR at capacity (`OVERLOADED`, `OCR_AT_CAPACITY`).",
  ],
} as const;

/** The rate-limit headers of every authenticated response (see the handler). */
export const RATE_LIMIT_HEADERS = {
  "X-RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "X-RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "X-RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
} as const;

/** `components.responses`: one response per shared error status, with its headers and body. */
export function errorResponses(usageHeader: string): JsonObject {
  const responses: JsonObject = {};
  for (const [status, [name, description]] of Object.entries(ERROR_RESPONSES)) {
    const schema = status === "422" ? "ValidationError" : "MessageError";
    responses[name] = {
      description,
      headers: {
        [usageHeader]: { $ref: "#/components/headers/Usage" },
        ...(status === "429"
          ? { ...RATE_LIMIT_HEADERS, "Retry-After": { $ref: "#/components/headers/RetryAfter" } }
          : {}),
        ...(status === "5XX" ? { "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : {}),
      },
      content: { "application/json": { schema: { $ref: SCHEMA_REF + schema } } },
    };
  }
  return responses;
}

/** `components.headers`: the usage, retry and rate-limit headers. */
export function componentHeaders(): JsonObject {
  return {
    Usage: {
      description:
        "Images billed by this request: 1 per 201 (2 for remove-background) on live keys, 0 otherwise.",
      schema: { type: "string", pattern: "^[0-9]+$" },
    },
    RetryAfter: {
      description:
        "Seconds to wait before retrying: on 429, and on 503 (storage or model outage, open model circuit, node at capacity).",
      schema: { type: "string", pattern: "^[0-9]+$" },
    },
    RateLimitLimit: {
      description: "Requests per minute of this key (sliding 60 s window). On every authenticated response.",
      schema: { type: "string", pattern: "^[0-9]+$" },
    },
    RateLimitRemaining: {
      description: "Requests left in the current 60 s window.",
      schema: { type: "string", pattern: "^[0-9]+$" },
    },
    RateLimitReset: {
      description: "Seconds until one more request is admitted (0 while some remain).",
      schema: { type: "string", pattern: "^[0-9]+$" },
    },
  };
}

/** `components.securitySchemes`: the `x-api-key` header. */
export function securitySchemes(): JsonObject {
  return {
    ApiKeyAuth: {
      type: "apiKey",
      in: "header",
      name: "x-api-key",
      description: "A `test_` or `live_` key; test keys work on a separate, watermarked stage.",
    },
  };
}

/** The error statuses an operation can answer, derived from what its routes read. */
export function errorStatuses(group: readonly Route[]): (keyof typeof ERROR_RESPONSES)[] {
  const statuses = new Set<keyof typeof ERROR_RESPONSES>();
  for (const route of group) {
    const hasPathParameters = route.path.includes("{");
    if (route.body !== "none") statuses.add("400");
    if (route.auth) statuses.add("401");
    if (route.auth && (hasPathParameters || route.successStatus === 201)) statuses.add("403");
    if (hasPathParameters) statuses.add("404");
    if (route.body !== "none" || route.querySchema !== undefined || hasPathParameters) statuses.add("422");
    if (route.auth) statuses.add("429");
    statuses.add("5XX");
  }
  return (Object.keys(ERROR_RESPONSES) as (keyof typeof ERROR_RESPONSES)[]).filter((status) =>
    statuses.has(status),
  );
}
