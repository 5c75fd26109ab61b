import { createOpenApiDocument, type OpenApiDocument } from "../openapi.js";
import { openApiDocumentSchema } from "../response-schemas.js";
import type { Route } from "./route.js";

const cache = new WeakMap<readonly Route[], Map<string, OpenApiDocument>>();

/**
 * `GET /v1/openapi.json`: the OpenAPI 3.1 document of the table the handler serves, with the
 * mount URL as its server. Public (`auth: false`), like the documentation it replaces.
 */
export const openApiRoute: Route = {
  operationId: "getOpenApiDocument",
  method: "GET",
  path: "/v1/openapi.json",
  summary: "The OpenAPI 3.1 document of this API (no key needed).",
  auth: false,
  body: "none",
  responseSchema: openApiDocumentSchema,
  successStatus: 200,
  invoke: async (context) => {
    let byServer = cache.get(context.routes);
    if (byServer === undefined) {
      byServer = new Map();
      cache.set(context.routes, byServer);
    }
    const cacheKey = `${context.usageHeaderName} ${context.baseUrl}`;
    let document = byServer.get(cacheKey);
    if (document === undefined) {
      document = createOpenApiDocument(context.routes, {
        serverUrl: context.baseUrl,
        usageHeaderName: context.usageHeaderName,
      });
      // Bounded: one entry per distinct base URL, and base URLs come from configuration or Host headers.
      if (byServer.size >= 16) byServer.clear();
      byServer.set(cacheKey, document);
    }
    return { kind: "json", status: 200, body: document };
  },
};
