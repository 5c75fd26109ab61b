import type { Client } from "openapi-fetch";
import type { ResponseInfo } from "./errors.js";
import type { ImageSource } from "./image-source.js";
import type { components, operations, paths } from "./schema.gen.js";

export type Schemas = components["schemas"];
/** An image record (`Image` in the OpenAPI document). */
export type Image = Schemas["Image"];
/** One page of `GET /v1/images`. */
export type ImageList = Schemas["ImageList"];
/** `GET /v1/images/{image_id}/metadata`. */
export type ImageMetadata = Schemas["GetImageMetadataResponse"];
/** Query of `GET /v1/images`. */
export type ListQuery = NonNullable<operations["listImages"]["parameters"]["query"]>;

/** The image operations (`POST /v1/images/{image_id}/<route>`), by method name. */
export const OPERATION_ROUTES = {
  mirror: "/v1/images/{image_id}/mirror",
  convert: "/v1/images/{image_id}/convert",
  resize: "/v1/images/{image_id}/resize",
  transform: "/v1/images/{image_id}/transform",
  crop: "/v1/images/{image_id}/crop",
  rotate: "/v1/images/{image_id}/rotate",
  modulate: "/v1/images/{image_id}/modulate",
  blur: "/v1/images/{image_id}/blur",
  removeBackground: "/v1/images/{image_id}/remove-background",
  watermark: "/v1/images/{image_id}/watermark",
  visualize: "/v1/images/{image_id}/visualize",
  classify: "/v1/images/{image_id}/classify",
  extractFormattedText: "/v1/images/{image_id}/extract-formatted-text",
} as const satisfies Record<string, keyof paths>;

/** Method names of the image operations, e.g. `resize`, `removeBackground`. */
export type OperationName = keyof typeof OPERATION_ROUTES;
type OperationOf<N extends OperationName> = paths[(typeof OPERATION_ROUTES)[N]]["post"];
/** The JSON body of an operation, exactly as the API takes it (snake_case fields included). */
export type OperationBody<N extends OperationName> = NonNullable<
  OperationOf<N>["requestBody"]
>["content"]["application/json"];
/** What an operation answers with 201: an {@link Image}, or the result of classify, visualize, extract. */
export type OperationResult<N extends OperationName> =
  OperationOf<N>["responses"][201]["content"]["application/json"];

/** Options of {@link createPixportClient}. */
export interface PixportClientOptions {
  /** Where the API is, e.g. `https://images.example.com` (without `/v1`). */
  baseUrl: string;
  /** The `x-api-key` of every call; routes without a key (delivery, OpenAPI) do not need it. */
  apiKey?: string;
  /** A `fetch` to use instead of the global one (tests, proxies, retries). */
  fetch?: (request: Request) => Promise<Response>;
  /** Called with every response's status, usage and rate-limit headers, success or not. */
  onResponse?: (info: ResponseInfo) => void;
}

/** Per-call options. */
export interface CallOptions {
  /** Aborts the request. */
  signal?: AbortSignal;
}

export type OperationMethods = {
  [N in OperationName]: (
    imageId: string,
    body: OperationBody<N>,
    options?: CallOptions,
  ) => Promise<OperationResult<N>>;
};

/** The client: `images` for the API's routes, `raw` for openapi-fetch's typed `GET`/`POST`/`DELETE`. */
export interface PixportClient {
  images: OperationMethods & {
    /** `POST /v1/images/upload`: stores an image from bytes, a Blob/File or a stream. */
    upload(
      input: { name: string; image: ImageSource; filename?: string },
      options?: CallOptions,
    ): Promise<Image>;
    /** `POST /v1/images` (JSON): imports an image from a URL on an allowed origin. */
    createFromUrl(body: Schemas["CreateImageFromUrlRequest"], options?: CallOptions): Promise<Image>;
    /** `POST /v1/images/imagine`: generates an image from a prompt. */
    imagine(body: Schemas["ImagineImageRequest"], options?: CallOptions): Promise<Image>;
    /** `GET /v1/images`: one page, newest first. */
    list(query?: ListQuery, options?: CallOptions): Promise<ImageList>;
    /** Every page of `GET /v1/images`, following `links.next`. */
    pages(query?: ListQuery, options?: CallOptions): AsyncIterableIterator<ImageList>;
    /** Every image of every page. */
    all(query?: ListQuery, options?: CallOptions): AsyncIterableIterator<Image>;
    get(imageId: string, options?: CallOptions): Promise<Image>;
    delete(imageId: string, options?: CallOptions): Promise<void>;
    metadata(imageId: string, options?: CallOptions): Promise<ImageMetadata>;
    /** `GET /v1/images/{image_id}/download`: the stored bytes (the Blob's `type` is the image's). */
    download(imageId: string, options?: CallOptions): Promise<Blob>;
    publish(imageId: string, options?: CallOptions): Promise<Image>;
    unpublish(imageId: string, options?: CallOptions): Promise<Image>;
    /** `POST /v1/images/{image_id}/signed-url`: a variant URL that works until it expires. */
    signedUrl(
      imageId: string,
      body?: Schemas["CreateSignedUrlRequest"],
      options?: CallOptions,
    ): Promise<operations["createSignedUrl"]["responses"][200]["content"]["application/json"]>;
  };
  /** `GET /v/{signature}/{image_id}/{variant}`: a variant's bytes (no key needed). */
  variant(
    path: { signature: string; imageId: string; variant: string },
    options?: CallOptions & { accept?: string },
  ): Promise<Blob>;
  /** `GET /v1/openapi.json`. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>>;
  /** openapi-fetch's client over the same base URL, key and hooks, answering `{data, error, response}`. */
  raw: Client<paths>;
}
