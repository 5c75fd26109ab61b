import type { Caller, ImagePipeline, OperationId } from "@pixport/core";
import type { z } from "zod";
import type { HttpRequest } from "../types.js";

/** How a route reads its body. */
export type BodyKind = "none" | "json" | "multipart";

/** What a route hands back to the handler. */
export type RouteResult =
  | { kind: "json"; status: number; body: unknown }
  | {
      kind: "binary";
      status: number;
      contentType: string;
      data: Uint8Array;
      etag?: string;
      /** Extra headers (they win over the defaults, e.g. `Cache-Control`). */
      headers?: Record<string, string>;
    }
  | { kind: "empty"; status: number; headers?: Record<string, string> };

/** Everything a route's `invoke` receives. */
export interface RouteContext {
  pipeline: ImagePipeline;
  /**
   * The authenticated caller. Routes with `auth: false` have none: reading it there throws an
   * `INTERNAL` error (a programming mistake, never a client's).
   */
  caller: Caller;
  request: HttpRequest;
  /** Path parameters by name, e.g. `{ image_id: "image_..." }`. */
  params: Readonly<Record<string, string>>;
  /** The parsed JSON body (`undefined` when absent), for `json` routes. */
  body: unknown;
  /** Text fields and file of a `multipart` route. */
  multipart: { fields: Map<string, string>; file: Uint8Array | undefined } | undefined;
  /** Absolute base URL for links, without a trailing slash. */
  baseUrl: string;
  /** The route table the handler serves (the OpenAPI route describes it). */
  routes: readonly Route[];
  /** Name of the usage header this handler sets (for the OpenAPI document). */
  usageHeaderName: string;
}

/**
 * The ids of pixport's own routes: the operations of the core's table, origin-image delivery (a
 * pipeline method outside the table, like the document) and the OpenAPI document.
 */
export type OwnRouteId = OperationId | "deliverOriginVariant" | "getOpenApiDocument";

/**
 * One route as data: the single source for every binding and for the OpenAPI document.
 * `operationId` is the core operation's name (also used for billing). Pixport's own routes are
 * {@link OwnRoute}s, checked against the operations table at compile time; a route of your own
 * names its id (`Route<"pingImage">`), and the handler serves any `Route`.
 */
export interface Route<Id extends string = string> {
  /** The core operation (an `OperationId`) or the id of a route of your own. */
  operationId: Id;
  method: "GET" | "POST" | "DELETE";
  /** OpenAPI-style path template, e.g. `/v1/images/{image_id}/resize`. */
  path: string;
  summary: string;
  /** Whether an `x-api-key` is required. */
  auth: boolean;
  body: BodyKind;
  /**
   * The body schema for documentation (JSON routes: the JSON body; multipart routes: an object of
   * the parts, files as `contentMediaType` strings). Validation itself happens in the core.
   */
  bodySchema?: z.ZodType;
  /** The query schema for documentation. */
  querySchema?: z.ZodType;
  /** The path parameters (an object keyed by the `{names}` of `path`) for documentation. */
  paramsSchema?: z.ZodType;
  /** Schema of the JSON body of a successful response, for documentation. */
  responseSchema?: z.ZodType;
  /** Media types of a successful binary response (e.g. the download), for documentation. */
  responseMediaTypes?: readonly string[];
  /** Status of a successful call. */
  successStatus: number;
  /**
   * For `POST /v1/images`: the same path serves several content types; the handler picks the route
   * whose `accepts` matches the request's media type.
   */
  accepts?: (mediaType: string | undefined) => boolean;
  /**
   * The path parameter (the last one) that takes the rest of the path, `/` included, handed to the
   * route exactly as sent (not percent-decoded), e.g. `{path}` of an origin image's URL.
   */
  restParameter?: string;
  invoke(context: RouteContext): Promise<RouteResult>;
}

/** A route of pixport's own table: its id is an operation of the core's table (or the document). */
export type OwnRoute = Route<OwnRouteId>;
