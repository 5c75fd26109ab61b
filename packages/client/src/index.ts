/**
 * `@pixport/client`: a typed client of pixport's HTTP API for browsers and Node 20.
 *
 * The types come from pixport's OpenAPI document (`schema.gen.ts`, generated at build time by
 * openapi-typescript from `packages/http/openapi.json`); requests go through openapi-fetch, a
 * 6 kB typed layer over `fetch`. Nothing of the server is imported at run time.
 *
 * @example
 * ```ts
 * const pixport = createPixportClient({ baseUrl: "http://127.0.0.1:3000", apiKey: process.env.PIXPORT_KEY });
 * const image = await pixport.images.upload({ name: "cat", image: await readFile("cat.jpg") });
 * const small = await pixport.images.resize(image.id, { width: 800, fit: "cover" });
 * for await (const each of pixport.images.all()) console.log(each.id, each.width);
 * ```
 */
import createFetchClient from "openapi-fetch";
import type { PixportClient, PixportClientOptions } from "./api-types.js";
import { describeResponse, PixportApiError } from "./errors.js";
import { createImageMethods, type Unwrap } from "./image-methods.js";
import type { paths } from "./schema.gen.js";

export type {
  CallOptions,
  Image,
  ImageList,
  ImageMetadata,
  ListQuery,
  OperationBody,
  OperationName,
  OperationResult,
  PixportClient,
  PixportClientOptions,
} from "./api-types.js";
export { PixportApiError, type RateLimit, type ResponseInfo } from "./errors.js";
export type { ImageSource } from "./image-source.js";
export type { components, operations, paths } from "./schema.gen.js";

/**
 * Creates a {@link PixportClient}. See the module documentation for an example.
 *
 * @example
 * ```ts
 * const pixport = createPixportClient({ baseUrl: "http://localhost:3000", apiKey: process.env.PIXPORT_KEY });
 * const image = await pixport.images.upload({ name: "cat", image: await readFile("cat.jpg") });
 * const thumb = await pixport.images.resize(image.id, { width: 200, fit: "cover" });
 * ```
 */
export function createPixportClient(options: PixportClientOptions): PixportClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const raw = createFetchClient<paths>({
    baseUrl,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.apiKey === undefined ? {} : { headers: { "x-api-key": options.apiKey } }),
  });
  raw.use({
    onResponse({ request, response }) {
      options.onResponse?.(describeResponse(request.method, response));
    },
  });

  const unwrap: Unwrap = async <T>(
    pending: Promise<{ data?: T; error?: unknown; response: Response }>,
    method: string,
  ): Promise<T> => {
    const { data, error, response } = await pending;
    if (!response.ok) throw new PixportApiError(describeResponse(method, response), error);
    return data as T;
  };

  return {
    raw,
    images: createImageMethods(raw, unwrap),
    variant: ({ signature, imageId, variant }, { accept, ...call } = {}) =>
      unwrap(
        raw.GET("/v/{signature}/{image_id}/{variant}", {
          params: { path: { signature, image_id: imageId, variant } },
          pathSerializer: variantPath,
          parseAs: "blob",
          // No key: variant URLs are public (and the browser may cache them).
          headers: { "x-api-key": null, ...(accept === undefined ? {} : { accept }) },
          ...call,
        }),
        "GET",
      ) as Promise<Blob>,
    openapi: (call = {}) =>
      unwrap(raw.GET("/v1/openapi.json", { ...call }), "GET") as Promise<Record<string, unknown>>,
  };
}

/**
 * A variant URL's path as the URL signer writes it: a variant URL has one spelling, and the
 * server answers 404 to a percent-encoded one, so the commas between modifiers and the colons of
 * `crop_` stay as they are (every other character of a variant path is URL-safe).
 */
function variantPath(pathname: string, params: Record<string, unknown>): string {
  return pathname.replace(/\{(\w+)\}/g, (_whole, name: string) =>
    encodeURIComponent(String(params[name] ?? ""))
      .replace(/%2C/gi, ",")
      .replace(/%3A/gi, ":"),
  );
}
