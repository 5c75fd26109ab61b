import { ErrorCodes, type ImagePipeline, ImagePipelineError } from "@pixport/core";
import { BROWSER_FORMATS, MIME_TYPES } from "@pixport/core/adapter-kit";
import { CLIENT_HINT_HEADERS } from "@pixport/core/internal";
import { originVariantPathSchema } from "../response-schemas.js";
import type { OwnRoute, RouteContext, RouteResult } from "./route.js";

type DeliveredVariant = Awaited<ReturnType<ImagePipeline["deliverVariant"]>>;

/** The request's `Accept`, one string. */
export function acceptOf(context: RouteContext): string | undefined {
  return header(context, "accept");
}

function header(context: RouteContext, name: string): string | undefined {
  const value = context.request.headers[name];
  return Array.isArray(value) ? value.join(",") : value;
}

/** The client hints `w_auto` reads (`Sec-CH-Width`/`Width`, `Sec-CH-DPR`/`DPR`). */
export function hintsOf(context: RouteContext): { width: string | undefined; dpr: string | undefined } {
  return {
    width: header(context, "sec-ch-width") ?? header(context, "width"),
    dpr: header(context, "sec-ch-dpr") ?? header(context, "dpr"),
  };
}

/**
 * The answer of a delivered variant: its cache headers, and 304 without a body when the client
 * already holds it (`If-None-Match`).
 */
export function variantAnswer(context: RouteContext, variant: DeliveredVariant): RouteResult {
  const headers: Record<string, string> = {
    "Cache-Control": variant.cacheControl,
    "X-Cache": variant.cache,
    // Browsers send the hints w_auto reads once a response asks for them.
    "Accept-CH": CLIENT_HINT_HEADERS.join(", "),
    ...(variant.vary.length > 0 ? { Vary: variant.vary.join(", ") } : {}),
  };
  const match = context.request.headers["if-none-match"];
  const tags = (Array.isArray(match) ? match.join(",") : (match ?? "")).split(",").map((tag) => tag.trim());
  if (tags.includes(variant.etag) || tags.includes("*")) {
    return { kind: "empty", status: 304, headers: { ...headers, ETag: variant.etag } };
  }
  return {
    kind: "binary",
    status: 200,
    contentType: variant.contentType,
    data: variant.data,
    etag: variant.etag,
    headers,
  };
}

/** `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`: a variant of an origin's image. */
export const originVariantRoute: OwnRoute = {
  operationId: "deliverOriginVariant",
  method: "GET",
  path: "/v/{signature}/o/{origin}/{modifiers}/{path}",
  summary:
    "A variant of an image that lives on a configured origin (an HTTP server, an S3 bucket, a directory): `{path}` is the object's path under the origin, one or more segments each written as encodeURIComponent writes it, followed by `.{ext}` (the output format, as for stored images' variants), e.g. `products/shoe.jpg.auto`; `{modifiers}` are the canonical modifiers or `_`. Signed like stored images' variants over `/o/{origin}/{modifiers}/{path}`, or `_` for an origin that allows unsigned URLs within its widths, qualities and formats. No key; HEAD answers the headers.",
  auth: false,
  body: "none",
  paramsSchema: originVariantPathSchema,
  responseMediaTypes: BROWSER_FORMATS.map((format) => MIME_TYPES[format]),
  successStatus: 200,
  restParameter: "path",
  invoke: async (context) => {
    // One spelling per variant (a CDN keys its cache by the URL as sent): no trailing slash.
    if (context.request.path.endsWith("/")) {
      throw new ImagePipelineError(
        ErrorCodes.ROUTE_NOT_FOUND,
        `Variant URLs have one spelling, without a trailing slash: not ${context.request.path}.`,
      );
    }
    const variant = await context.pipeline.deliverOriginVariant({
      signature: context.params.signature ?? "",
      origin: context.params.origin ?? "",
      modifiers: context.params.modifiers ?? "",
      path: context.params.path ?? "",
      accept: acceptOf(context),
      hints: hintsOf(context),
      signal: context.request.signal,
    });
    return variantAnswer(context, variant);
  },
};
