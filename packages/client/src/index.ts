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
import createFetchClient, { type Client } from "openapi-fetch";
import type { components, operations, paths } from "./schema.gen.js";

export type { components, operations, paths };

type Schemas = components["schemas"];
/** An image record (`Image` in the OpenAPI document). */
export type Image = Schemas["Image"];
/** One page of `GET /v1/images`. */
export type ImageList = Schemas["ImageList"];
/** `GET /v1/images/{image_id}/metadata`. */
export type ImageMetadata = Schemas["GetImageMetadataResponse"];
/** Query of `GET /v1/images`. */
export type ListQuery = NonNullable<operations["listImages"]["parameters"]["query"]>;

/** The image operations (`POST /v1/images/{image_id}/<route>`), by method name. */
const OPERATION_ROUTES = {
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

/** Rate-limit state of the key, from the `X-RateLimit-*` headers (absent on unauthenticated routes). */
export interface RateLimit {
  /** Requests per minute of the key. */
  limit?: number;
  /** Requests left in the current 60 s window. */
  remaining?: number;
  /** Seconds until one more request is admitted. */
  reset?: number;
}

/** What the client saw of one response; given to {@link PixportClientOptions.onResponse}. */
export interface ResponseInfo {
  method: string;
  /** The request's URL. */
  url: string;
  status: number;
  /** Images billed by the request (`X-Image-Processing-Usage`), when the server said. */
  usage?: number;
  rateLimit: RateLimit;
  /** `Retry-After` seconds (429 and 503), when present. */
  retryAfter?: number;
}

/**
 * Every non-2xx answer of the API, with the contract's error body: `message` for most errors,
 * `errors` (one `<field> <message>` per failing field) for 422 validation errors.
 */
export class PixportApiError extends Error {
  override readonly name = "PixportApiError";
  /** HTTP status. */
  readonly status: number;
  /** Error kind, a URL (the body's `type`). */
  readonly type: string | undefined;
  /** Title of the error kind, e.g. `Not Found` (the body's `error`). */
  readonly title: string | undefined;
  /** pixport's machine-readable code, e.g. `IMAGE_NOT_FOUND`. */
  readonly code: string | undefined;
  /** Every failing field of a 422, e.g. `width must be an integer between 1 and 10000`. */
  readonly errors: readonly string[] | undefined;
  readonly rateLimit: RateLimit;
  /** Seconds to wait before retrying (429, 503). */
  readonly retryAfter: number | undefined;
  readonly usage: number | undefined;
  /** The parsed body as the server sent it (text when it was not JSON). */
  readonly body: unknown;

  constructor(info: ResponseInfo, body: unknown) {
    const fields = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    const errors = Array.isArray(fields.errors)
      ? fields.errors.filter((each): each is string => typeof each === "string")
      : undefined;
    const message =
      typeof fields.message === "string"
        ? fields.message
        : errors !== undefined
          ? errors.join("; ")
          : typeof body === "string" && body !== ""
            ? body.slice(0, 200)
            : `HTTP ${info.status}`;
    super(message);
    this.status = info.status;
    this.type = typeof fields.type === "string" ? fields.type : undefined;
    this.title = typeof fields.error === "string" ? fields.error : undefined;
    this.code = typeof fields.code === "string" ? fields.code : undefined;
    this.errors = errors;
    this.rateLimit = info.rateLimit;
    this.retryAfter = info.retryAfter;
    this.usage = info.usage;
    this.body = body;
  }
}

/** Image bytes the upload takes: browser `Blob`/`File`, bytes, or a stream (Node `Readable`, web `ReadableStream`). */
export type ImageSource =
  | Blob
  | Uint8Array
  | ArrayBuffer
  | AsyncIterable<Uint8Array>
  | ReadableStream<Uint8Array>;

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

const integer = (value: string | null): number | undefined => {
  if (value === null || !/^[0-9]+$/.test(value)) return undefined;
  return Number(value);
};

function describe(method: string, response: Response): ResponseInfo {
  const headers = response.headers;
  const rateLimit: RateLimit = {};
  const limit = integer(headers.get("x-ratelimit-limit"));
  const remaining = integer(headers.get("x-ratelimit-remaining"));
  const reset = integer(headers.get("x-ratelimit-reset"));
  if (limit !== undefined) rateLimit.limit = limit;
  if (remaining !== undefined) rateLimit.remaining = remaining;
  if (reset !== undefined) rateLimit.reset = reset;
  const info: ResponseInfo = { method, url: response.url, status: response.status, rateLimit };
  const usage = integer(headers.get("x-image-processing-usage"));
  if (usage !== undefined) info.usage = usage;
  const retryAfter = integer(headers.get("retry-after"));
  if (retryAfter !== undefined) info.retryAfter = retryAfter;
  return info;
}

/** Reads a stream or async iterable of bytes into one Blob (multipart needs the whole part). */
async function toBlob(source: ImageSource): Promise<Blob> {
  if (source instanceof Blob) return source;
  if (source instanceof ArrayBuffer) return new Blob([source]);
  if (source instanceof Uint8Array) return new Blob([source as Uint8Array<ArrayBuffer>]);
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  if (typeof (source as ReadableStream<Uint8Array>).getReader === "function") {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value as Uint8Array<ArrayBuffer>);
    }
  } else {
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      chunks.push(
        (typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk) as Uint8Array<ArrayBuffer>,
      );
    }
  }
  return new Blob(chunks);
}

/** The `from` cursor of a page's `links.next` (absolute URLs name the server's public origin, not ours). */
function nextCursor(page: ImageList): string | undefined {
  if (page.links.next === null) return undefined;
  return new URL(page.links.next).searchParams.get("from") ?? undefined;
}

type OperationMethods = {
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
      options.onResponse?.(describe(request.method, response));
    },
  });

  /** Returns the data of a 2xx answer, or throws the API's error. */
  const unwrap = async <T>(
    pending: Promise<{ data?: T; error?: unknown; response: Response }>,
    method: string,
  ): Promise<T> => {
    const { data, error, response } = await pending;
    if (!response.ok) throw new PixportApiError(describe(method, response), error);
    return data as T;
  };
  const imagePath = (imageId: string) => ({ params: { path: { image_id: imageId } } });

  const operations = Object.fromEntries(
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
    raw,
    images: {
      ...operations,
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
      list,
      pages,
      async *all(query = {}, call = {}) {
        for await (const page of pages(query, call)) yield* page.data;
      },
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
        unwrap(
          raw.POST("/v1/images/{image_id}/signed-url", { ...imagePath(imageId), body, ...call }),
          "POST",
        ),
    },
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
