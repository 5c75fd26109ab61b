import { z } from "zod";
import {
  componentHeaders,
  ERROR_RESPONSES,
  errorResponses,
  errorStatuses,
  RATE_LIMIT_HEADERS,
  SCHEMA_REF,
  securitySchemes,
} from "./openapi-components.js";
import {
  imageListSchema,
  imageSchema,
  messageErrorSchema,
  validationErrorSchema,
} from "./response-schemas.js";
import type { Route } from "./routes/route.js";

/** The `info.version` of the document: the version of the IMG Processing API pixport serves. */
export const OPENAPI_API_VERSION = "1.0.0";

/** Options of {@link createOpenApiDocument}. */
export interface OpenApiDocumentOptions {
  /** Absolute base URL listed under `servers` (the served document uses its mount URL). @default none */
  serverUrl?: string;
  /** Name of the usage header on every response. @default "X-Image-Processing-Usage" */
  usageHeaderName?: string;
}

/** An OpenAPI 3.1 document (plain JSON). */
export type OpenApiDocument = {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, Record<string, unknown>>;
} & Record<string, unknown>;

type JsonObject = Record<string, unknown>;

/**
 * Builds the OpenAPI 3.1 document of a route table. Everything comes from the route data and its
 * zod schemas (`z.toJSONSchema`): paths, parameters, request bodies (JSON and multipart), success
 * responses, the contract's two error shapes and the `x-api-key` security scheme (`ApiKeyAuth`,
 * as the original service names it). Routes sharing a method and path (`POST /v1/images`:
 * multipart upload or JSON import) become one operation with one body per media type.
 *
 * @example
 * ```ts
 * const document = createOpenApiDocument(defaultRoutes, { serverUrl: "https://api.example.com" });
 * ```
 */
export function createOpenApiDocument(
  routes: readonly Route[],
  options: OpenApiDocumentOptions = {},
): OpenApiDocument {
  const { registry, register } = schemaRegistry();
  const usageHeader = options.usageHeaderName ?? "X-Image-Processing-Usage";
  const usedOperationIds = new Set<string>();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const group of groupRoutes(routes)) {
    const first = group[0] as Route;
    const operation = operationOf(group, usedOperationIds, usageHeader, register);
    paths[first.path] = { ...paths[first.path], [first.method.toLowerCase()]: operation };
  }

  return stripUndefined({
    openapi: "3.1.0",
    info: {
      title: "IMG Processing API (pixport)",
      version: OPENAPI_API_VERSION,
      description:
        "The IMG Processing API as served by pixport: upload, list, download, publish and transform " +
        "images. Every request except this document carries an `x-api-key` header (`test_` or `live_` keys).",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: options.serverUrl === undefined ? undefined : [{ url: options.serverUrl }],
    security: [{ ApiKeyAuth: [] }],
    paths,
    components: {
      schemas: componentSchemas(registry),
      responses: errorResponses(usageHeader),
      headers: componentHeaders(),
      securitySchemes: securitySchemes(),
    },
  }) as OpenApiDocument;
}

/** Gives each schema a component name, the first time it is used (`Name`, `Name2`, ...). */
type Register = (schema: z.ZodType, name: string) => JsonObject;

/** The registry of named component schemas, with the contract's shared ones first. */
function schemaRegistry(): { registry: z.core.$ZodRegistry<{ id: string }>; register: Register } {
  const registry = z.registry<{ id: string }>();
  const names = new Map<z.ZodType, string>();
  const register: Register = (schema, name) => {
    let id = names.get(schema);
    if (id === undefined) {
      id = name;
      const taken = new Set(names.values());
      for (let suffix = 2; taken.has(id); suffix += 1) id = `${name}${suffix}`;
      registry.add(schema, { id });
      names.set(schema, id);
    }
    return { $ref: SCHEMA_REF + id };
  };
  register(imageSchema, "Image");
  register(imageListSchema, "ImageList");
  register(messageErrorSchema, "MessageError");
  register(validationErrorSchema, "ValidationError");
  return { registry, register };
}

/** `components.schemas`: every registered schema as JSON Schema, referenced by name. */
function componentSchemas(registry: z.core.$ZodRegistry<{ id: string }>): Record<string, JsonObject> {
  const schemas = (
    z.toJSONSchema(registry, {
      io: "input",
      unrepresentable: "any",
      uri: (id) => SCHEMA_REF + id,
    }) as { schemas: Record<string, JsonObject> }
  ).schemas;
  for (const schema of Object.values(schemas)) {
    delete schema.$schema;
    delete schema.$id;
  }
  return schemas;
}

/** Routes grouped by method and path, in table order: each group is one operation. */
function groupRoutes(routes: readonly Route[]): Iterable<Route[]> {
  const groups = new Map<string, Route[]>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    groups.set(key, [...(groups.get(key) ?? []), route]);
  }
  return groups.values();
}

/** The operation object of one group of routes sharing a method and path. */
function operationOf(
  group: readonly Route[],
  usedOperationIds: Set<string>,
  usageHeader: string,
  register: Register,
): JsonObject {
  const first = group[0] as Route;
  const operationId = uniqueOperationId(group, usedOperationIds);
  const operation: JsonObject = {
    operationId,
    summary: (group.find((route) => route.operationId === operationId) ?? first).summary,
  };
  if (group.length > 1) {
    operation.description = group
      .map((route) => `- \`${mediaTypeOf(route) ?? "no body"}\`: ${route.summary}`)
      .join("\n");
  }
  const parameters = [
    ...pathParameters(first),
    ...(first.querySchema === undefined ? [] : schemaParameters(first.querySchema, "query")),
  ];
  if (parameters.length > 0) operation.parameters = parameters;

  const bodies = group.filter((route) => route.body !== "none");
  if (bodies.length > 0) operation.requestBody = requestBody(bodies, register);

  operation.responses = {
    [String(first.successStatus)]: successResponse(first, usageHeader, register),
    ...Object.fromEntries(
      errorStatuses(group).map((status) => [
        status,
        { $ref: `#/components/responses/${ERROR_RESPONSES[status][0]}` },
      ]),
    ),
  };
  if (!first.auth) operation.security = [];
  return operation;
}

/** The request body of the routes of one operation that take one: one content entry per media type. */
function requestBody(bodies: readonly Route[], register: Register): JsonObject {
  const content: JsonObject = {};
  let required = false;
  for (const route of bodies) {
    const schema =
      route.bodySchema === undefined ? {} : register(route.bodySchema, `${pascal(route.operationId)}Request`);
    content[mediaTypeOf(route) as string] = { schema };
    required ||= route.body === "multipart" || requiredProperties(route.bodySchema).length > 0;
  }
  return required
    ? { required, content }
    : {
        required,
        description: "Optional: `{}` and no body at all (no content type, zero length) are both accepted.",
        content,
      };
}

function mediaTypeOf(route: Route): string | undefined {
  if (route.body === "json") return "application/json";
  if (route.body === "multipart") return "multipart/form-data";
  return undefined;
}

/** The first operation id of the group not used yet (two routes upload), else a numbered one. */
function uniqueOperationId(group: readonly Route[], used: Set<string>): string {
  let id = group.map((route) => route.operationId).find((candidate) => !used.has(candidate));
  if (id === undefined) {
    const base = (group[0] as Route).operationId;
    for (let suffix = 2; id === undefined || used.has(id); suffix += 1) id = `${base}${suffix}`;
  }
  used.add(id);
  return id;
}

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function inlineSchema(schema: z.ZodType): JsonObject {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonObject;
  delete json.$schema;
  return json;
}

function requiredProperties(schema: z.ZodType | undefined): string[] {
  if (schema === undefined) return [];
  return (inlineSchema(schema).required as string[] | undefined) ?? [];
}

/** One parameter per property of an object schema. */
function schemaParameters(schema: z.ZodType, location: "path" | "query"): JsonObject[] {
  const json = inlineSchema(schema);
  const required = new Set((json.required as string[] | undefined) ?? []);
  const properties = (json.properties ?? {}) as Record<string, JsonObject>;
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return stripUndefined({
      name,
      in: location,
      required: location === "path" || required.has(name),
      description,
      schema: rest,
    });
  });
}

/** Path parameters from `paramsSchema`, plus a plain string for any `{name}` it does not cover. */
function pathParameters(route: Route): JsonObject[] {
  const declared = route.paramsSchema === undefined ? [] : schemaParameters(route.paramsSchema, "path");
  const names = [...route.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1] as string);
  return names.map(
    (name) =>
      declared.find((parameter) => parameter.name === name) ?? {
        name,
        in: "path",
        required: true,
        schema: { type: "string" },
      },
  );
}

function successResponse(route: Route, usageHeader: string, register: Register): JsonObject {
  const description =
    route.successStatus === 204 ? "Done; no body." : route.successStatus === 201 ? "Created." : "OK.";
  const response: JsonObject = {
    description,
    headers: {
      [usageHeader]: { $ref: "#/components/headers/Usage" },
      ...(route.auth ? RATE_LIMIT_HEADERS : {}),
    },
  };
  if (route.responseSchema !== undefined) {
    response.content = {
      "application/json": { schema: register(route.responseSchema, `${pascal(route.operationId)}Response`) },
    };
  } else if (route.responseMediaTypes !== undefined) {
    response.content = Object.fromEntries(
      route.responseMediaTypes.map((type) => [type, { schema: { type: "string", contentMediaType: type } }]),
    );
  }
  return response;
}

/** Drops `undefined` members so the JSON has no holes and compares exactly. */
function stripUndefined<T extends JsonObject>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as T;
}
