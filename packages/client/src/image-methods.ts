import type { Client } from "openapi-fetch";
import {
  type CallOptions,
  type Image,
  type ImageList,
  type ListQuery,
  OPERATION_ROUTES,
  type OperationBody,
  type OperationMethods,
  type PixportClient,
  type Schemas,
} from "./api-types.js";
import { toBlob } from "./image-source.js";
import type { paths } from "./schema.gen.js";

/** Returns the data of a 2xx answer, or throws the API's error. */
export type Unwrap = <T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
  method: string,
) => Promise<T>;

type ImageMethods = PixportClient["images"];

const imagePath = (imageId: string) => ({ params: { path: { image_id: imageId } } });

/** The `from` cursor of a page's `links.next` (absolute URLs name the server's public origin, not ours). */
function nextCursor(page: ImageList): string | undefined {
  if (page.links.next === null) return undefined;
  return new URL(page.links.next).searchParams.get("from") ?? undefined;
}

/** The thirteen image operations, one `POST /v1/images/{image_id}/<route>` each. */
function operationMethods(raw: Client<paths>, unwrap: Unwrap): OperationMethods {
  return Object.fromEntries(
    Object.entries(OPERATION_ROUTES).map(([name, route]) => [
      name,
      (imageId: string, body: unknown, call: CallOptions = {}) =>
        unwrap(
          // One generic call for the thirteen operation routes; each method's type is exact (above).
          raw.POST(route as "/v1/images/{image_id}/resize", {
            ...imagePath(imageId),
            body: body as OperationBody<"resize">,
            ...call,
          }),
          "POST",
        ),
    ]),
  ) as unknown as OperationMethods;
}

/** `GET /v1/images`: one page, every page, every image. */
function listingMethods(raw: Client<paths>, unwrap: Unwrap): Pick<ImageMethods, "list" | "pages" | "all"> {
  const list = (query: ListQuery = {}, call: CallOptions = {}) =>
    unwrap(raw.GET("/v1/images", { params: { query }, ...call }), "GET");

  async function* pages(query: ListQuery = {}, call: CallOptions = {}): AsyncIterableIterator<ImageList> {
    let cursor: ListQuery = { ...query };
    for (;;) {
      const page = await list(cursor, call);
      yield page;
      const from = nextCursor(page);
      if (from === undefined) return;
      cursor = { ...cursor, from };
    }
  }

  return {
    list,
    pages,
    async *all(query = {}, call = {}) {
      for await (const page of pages(query, call)) yield* page.data;
    },
  };
}

/** The routes that store a new image: upload, URL import and generation. */
function creationMethods(
  raw: Client<paths>,
  unwrap: Unwrap,
): Pick<ImageMethods, "upload" | "createFromUrl" | "imagine"> {
  return {
    async upload({ name, image, filename }, call = {}) {
      const form = new FormData();
      form.set("name", name);
      const blob = await toBlob(image);
      const fileName =
        filename ?? (typeof File !== "undefined" && blob instanceof File ? blob.name : "image");
      form.set("image", blob, fileName);
      return unwrap(
        raw.POST("/v1/images/upload", {
          body: form as unknown as Schemas["UploadImageRequest"],
          bodySerializer: (body) => body,
          ...call,
        }),
        "POST",
      );
    },
    createFromUrl: (body, call = {}) =>
      unwrap(
        raw.POST("/v1/images", {
          body,
          headers: { "content-type": "application/json" },
          ...call,
        }) as Promise<{ data?: Image; error?: unknown; response: Response }>,
        "POST",
      ),
    imagine: (body, call = {}) => unwrap(raw.POST("/v1/images/imagine", { body, ...call }), "POST"),
  };
}

/** The routes of one stored image: read, delete, download, publish, sign. */
function storedImageMethods(
  raw: Client<paths>,
  unwrap: Unwrap,
): Pick<ImageMethods, "get" | "delete" | "metadata" | "download" | "publish" | "unpublish" | "signedUrl"> {
  return {
    get: (imageId, call = {}) =>
      unwrap(raw.GET("/v1/images/{image_id}", { ...imagePath(imageId), ...call }), "GET"),
    async delete(imageId, call = {}) {
      await unwrap(raw.DELETE("/v1/images/{image_id}", { ...imagePath(imageId), ...call }), "DELETE");
    },
    metadata: (imageId, call = {}) =>
      unwrap(raw.GET("/v1/images/{image_id}/metadata", { ...imagePath(imageId), ...call }), "GET"),
    download: (imageId, call = {}) =>
      unwrap(
        raw.GET("/v1/images/{image_id}/download", { ...imagePath(imageId), parseAs: "blob", ...call }),
        "GET",
      ) as Promise<Blob>,
    publish: (imageId, call = {}) =>
      unwrap(raw.POST("/v1/images/{image_id}/publish", { ...imagePath(imageId), ...call }), "POST"),
    unpublish: (imageId, call = {}) =>
      unwrap(raw.POST("/v1/images/{image_id}/unpublish", { ...imagePath(imageId), ...call }), "POST"),
    signedUrl: (imageId, body = {}, call = {}) =>
      unwrap(raw.POST("/v1/images/{image_id}/signed-url", { ...imagePath(imageId), body, ...call }), "POST"),
  };
}

/** `PixportClient.images`: every `/v1/images` route as a typed method. */
export function createImageMethods(raw: Client<paths>, unwrap: Unwrap): ImageMethods {
  return {
    ...operationMethods(raw, unwrap),
    ...creationMethods(raw, unwrap),
    ...listingMethods(raw, unwrap),
    ...storedImageMethods(raw, unwrap),
  };
}
