import {
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryAccountStore,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  generateApiKey,
  generateKeyId,
  hashApiKey,
  type ImageCodec,
  type ImagePipeline,
  type ImagePipelineDeps,
  type ImagePipelineOptions,
  type KeyKind,
} from "@pixport/core";
import { createVariantSigner } from "@pixport/url-signer";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Colors, decodeRaw, halvesImage, pixelAt, solidImage } from "../fixtures/images.js";

/** A request as a client sends it, below the binding's mount point. */
export interface HttpBindingRequest {
  /** Upper-case method. */
  method: string;
  /** Path below the mount point, with its query string (e.g. `/v1/images?take=2`). */
  path: string;
  /** Header names in lower case. The driver adds `content-length` for a body, as a client would. */
  headers: Record<string, string>;
  /** The raw body, absent for none. */
  body?: Uint8Array;
}

/** What the client receives. */
export interface HttpBindingResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The raw body (empty when none). */
  body: Uint8Array;
}

/** What {@link HttpBindingConformanceOptions.setup} returns: a mounted binding and its keys. */
export interface HttpBindingTestContext {
  /** Sends one request through the binding (a socket, `inject`, or a synthesised event). */
  send(request: HttpBindingRequest): Promise<HttpBindingResponse>;
  /** Absolute URL of the mount point as clients see it, without a trailing slash (list links use it). */
  baseUrl: string;
  /** Creates an API key of `kind` for `accountId` and returns the secret. */
  createKey(kind: KeyKind, accountId: string): Promise<string>;
  /** The publisher's base URL: published images live at `{publicStorageBaseUrl}/images/{id}.{ext}`. */
  publicStorageBaseUrl: string;
  /**
   * Fetches a published URL without a key. Only deployments that serve their public copies (the
   * prebuilt server) provide it; a binding alone does not serve them (a CDN or the host app does),
   * so without it the suite checks the URLs but not what is served under them.
   */
  fetchPublic?: (url: string, headers?: Record<string, string>) => Promise<HttpBindingResponse>;
}

/** Options of {@link describeHttpBindingConformance}. */
export interface HttpBindingConformanceOptions {
  /** Suite title, e.g. `express (socket)`. */
  name: string;
  /** Mounts a fresh binding over a fresh pipeline; called once before the suite. */
  setup: () => Promise<HttpBindingTestContext>;
  /** Releases what `setup` made (servers, temp dirs); called once after the suite. */
  teardown?: (context: HttpBindingTestContext) => Promise<void>;
  /** Binding-specific tests that run inside the suite with the same context. */
  extraTests?: (context: () => HttpBindingTestContext) => void;
}

/** The delivery signing secret of {@link createHttpBindingPipeline}'s pipelines. */
export const BINDING_DELIVERY_SECRET = "binding-conformance-delivery-secret";

/** A pipeline on the in-memory reference adapters, for binding tests. */
export interface HttpBindingPipeline {
  pipeline: ImagePipeline;
  createKey(kind: KeyKind, accountId: string): Promise<string>;
  publicStorageBaseUrl: string;
}

/**
 * Builds a pipeline on the in-memory adapters with `codec`, published copies under
 * `publicStorageBaseUrl` (default `https://cdn.test`), and a `createKey` for the suite.
 */
export function createHttpBindingPipeline(options: {
  codec: ImageCodec;
  publicStorageBaseUrl?: string;
  pipelineOptions?: ImagePipelineOptions;
  /** Extra ports (a background remover, models, ...). */
  deps?: Partial<ImagePipelineDeps>;
}): HttpBindingPipeline {
  const publicStorageBaseUrl = options.publicStorageBaseUrl ?? "https://cdn.test";
  const blobStore = createMemoryBlobStore();
  const keys = createMemoryKeyStore();
  const accounts = createMemoryAccountStore();
  const pipeline = createImagePipeline(
    {
      accounts,
      codec: options.codec,
      blobStore,
      images: createMemoryImageRepository(),
      keys,
      publisher: createBlobStorePublisher({
        source: blobStore,
        target: createMemoryBlobStore(),
        publicBaseUrl: publicStorageBaseUrl,
      }),
      // Variant delivery with a fixed secret, so the suite can build and check variant URLs.
      variantSigner: createVariantSigner([BINDING_DELIVERY_SECRET]),
      ...options.deps,
    },
    {
      delivery: { baseUrl: publicStorageBaseUrl },
      // The binding suite checks the wire contract; the rate limits and the trial quota have their
      // own suites, so they are lifted here unless the caller passes policies.
      policies: { testRequestsPerMinute: 1_000_000, liveRequestsPerMinute: 1_000_000 },
      ...options.pipelineOptions,
    },
  );
  return {
    pipeline,
    publicStorageBaseUrl,
    async createKey(kind, accountId) {
      if (kind === "live") await accounts.setUpgraded(accountId, true);
      const key = generateApiKey(kind);
      await keys.insert({
        id: generateKeyId(),
        hash: await hashApiKey(key),
        displayPrefix: key.slice(0, 9),
        kind,
        accountId,
        createdAt: new Date().toISOString(),
      });
      return key;
    },
  };
}

/**
 * A `send` driver over a real socket: `fetch` to `{baseUrl}{path}`. Also fits
 * {@link HttpBindingTestContext.fetchPublic} when given absolute URLs (`baseUrl` `""`).
 */
export function createFetchDriver(
  baseUrl: string,
): (request: HttpBindingRequest) => Promise<HttpBindingResponse> {
  return async (request) => {
    const response = await fetch(`${baseUrl}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body as Uint8Array<ArrayBuffer> | undefined,
      redirect: "manual",
    });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    return { status: response.status, headers, body: new Uint8Array(await response.arrayBuffer()) };
  };
}

const IMAGE_KEYS = ["id", "name", "url", "width", "height", "format", "size", "created_at"];
const ID = /^image_[a-z][a-z0-9]{23}$/;
const ERRORS = "https://docs.img-processing.com/errors/";

interface CallOptions {
  key?: string;
  json?: unknown;
  raw?: string | Uint8Array;
  contentType?: string;
  form?: FormData;
  headers?: Record<string, string>;
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON bodies are asserted field by field.
type Json = any;

interface CallResult {
  status: number;
  header(name: string): string | undefined;
  json: Json;
  bytes: Uint8Array;
}

/** A multipart form with the SDK's part order (`name` first, then `image`). */
function uploadForm(name: string | undefined, image: Uint8Array | undefined, filename = "blob"): FormData {
  const form = new FormData();
  if (name !== undefined) form.append("name", name);
  if (image !== undefined) form.append("image", new Blob([image as Uint8Array<ArrayBuffer>]), filename);
  return form;
}

/**
 * Runs the HTTP contract suite (contract sections 1 to 6 as pixport answers them: every endpoint,
 * both error shapes, authentication and tenancy, pagination links, binary bodies both ways, the
 * public OpenAPI document) against one binding through its `send` driver. Assertions are on the
 * wire only, so every binding (Express, Fastify, Lambda, the prebuilt server) must answer
 * byte-for-byte alike.
 *
 * @example
 * ```ts
 * describeHttpBindingConformance({
 *   name: "fastify (inject)",
 *   setup: async () => {
 *     const { pipeline, createKey, publicStorageBaseUrl } = createHttpBindingPipeline({ codec });
 *     const app = Fastify();
 *     await app.register(pixportFastify, { pipeline, prefix: "/api" });
 *     return { send: (request) => inject(app, request), baseUrl: "http://localhost:80/api", createKey, publicStorageBaseUrl };
 *   },
 * });
 * ```
 */
export function describeHttpBindingConformance(options: HttpBindingConformanceOptions): void {
  describe(`HTTP binding conformance: ${options.name}`, () => {
    let context: HttpBindingTestContext | undefined;
    const current = (): HttpBindingTestContext => {
      if (context === undefined) throw new Error("the binding's setup did not complete");
      return context;
    };
    let base: string;
    let testKey: string;
    let liveKey: string;
    let otherAccountKey: string;
    let png: Uint8Array;

    beforeAll(async () => {
      context = await options.setup();
      base = context.baseUrl;
      testKey = await context.createKey("test", "acme");
      liveKey = await context.createKey("live", "acme");
      otherAccountKey = await context.createKey("test", "globex");
      png = await halvesImage(64, 32, Colors.red, Colors.blue);
    });

    afterAll(async () => {
      if (context !== undefined) await options.teardown?.(context);
    });

    /** Sends through the driver; absolute URLs (list links) must lie under the mount URL. */
    async function call(method: string, target: string, callOptions: CallOptions = {}): Promise<CallResult> {
      let path = target;
      if (/^https?:\/\//.test(target)) {
        expect(target.startsWith(`${base}/`), `${target} is not under ${base}`).toBe(true);
        path = target.slice(base.length);
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(callOptions.headers ?? {}))
        headers[name.toLowerCase()] = value;
      if (callOptions.key !== undefined) headers["x-api-key"] = callOptions.key;
      let body: Uint8Array | undefined;
      if (callOptions.json !== undefined) {
        headers["content-type"] = "application/json";
        body = new TextEncoder().encode(JSON.stringify(callOptions.json));
      } else if (callOptions.raw !== undefined) {
        if (callOptions.contentType !== undefined) headers["content-type"] = callOptions.contentType;
        body =
          typeof callOptions.raw === "string" ? new TextEncoder().encode(callOptions.raw) : callOptions.raw;
      } else if (callOptions.form !== undefined) {
        // Serialise the form exactly as fetch would, so every driver sends the same bytes.
        const encoded = new Request("http://form.invalid/", { method: "POST", body: callOptions.form });
        headers["content-type"] = encoded.headers.get("content-type") ?? "";
        body = new Uint8Array(await encoded.arrayBuffer());
      }
      const response = await current().send({ method, path, headers, body });
      const lowerCase = Object.fromEntries(
        Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), value]),
      );
      let json: Json;
      if ((lowerCase["content-type"] ?? "").includes("application/json")) {
        json = JSON.parse(new TextDecoder().decode(response.body));
      }
      return {
        status: response.status,
        header: (name) => lowerCase[name.toLowerCase()],
        json,
        bytes: response.body,
      };
    }

    async function upload(key: string, image: Uint8Array, name = "fixture"): Promise<Json> {
      const response = await call("POST", "/v1/images/upload", { key, form: uploadForm(name, image) });
      if (response.status !== 201)
        throw new Error(`upload failed: ${response.status} ${JSON.stringify(response.json)}`);
      return response.json;
    }

    describe("upload", () => {
      it("creates an image from a multipart upload with all eight keys in contract order", async () => {
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          form: uploadForm("halves", png),
        });
        expect(response.status).toBe(201);
        expect(Object.keys(response.json)).toEqual(IMAGE_KEYS);
        expect(response.json).toMatchObject({
          name: "halves",
          url: null,
          width: 64,
          height: 32,
          format: "png",
        });
        expect(response.json.id).toMatch(ID);
        expect(response.json.size).toBeGreaterThan(0);
        expect(new Date(response.json.created_at).toISOString()).toBe(response.json.created_at);
        expect(response.header("x-image-processing-usage")).toBe("0");
        expect(response.header("x-content-type-options")).toBe("nosniff");
      });

      it("accepts the seed's multipart POST /v1/images and bills live keys one image", async () => {
        const response = await call("POST", "/v1/images", {
          key: liveKey,
          form: uploadForm("seed-form", png),
        });
        expect(response.status).toBe(201);
        expect(response.json.name).toBe("seed-form");
        expect(response.header("x-image-processing-usage")).toBe("1");
      });

      it("detects the format from the bytes, not the file name", async () => {
        const jpeg = await solidImage(20, 10, { r: 10, g: 200, b: 10, alpha: 1 }, "jpeg");
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          form: uploadForm("x", jpeg, "x.png"),
        });
        expect(response.status).toBe(201);
        expect(response.json.format).toBe("jpeg");
      });

      it("lists every failing field at once: missing name and an SVG file", async () => {
        const svg = new TextEncoder().encode(
          '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
        );
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          form: uploadForm(undefined, svg, "a.svg"),
        });
        expect(response.status).toBe(422);
        expect(response.json).toMatchObject({
          type: `${ERRORS}validation-error`,
          error: "Validation Error",
          status: 422,
        });
        expect(response.json.message).toBeUndefined();
        expect(response.json.errors).toEqual([
          "name is required",
          "image must be a jpeg, png or webp file (or avif, gif or tiff)",
        ]);
      });

      it("refuses a name over 30 characters and a missing file", async () => {
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          form: uploadForm("x".repeat(31), undefined),
        });
        expect(response.status).toBe(422);
        expect(response.json.errors).toEqual([
          "name must be between 1 and 30 characters long",
          "image is required",
        ]);
      });

      it("refuses a file over 20 MB with a 422 naming image, never truncating it", async () => {
        const big = new Uint8Array(20 * 1024 * 1024 + 10);
        big.set(png);
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          form: uploadForm("big", big),
        });
        expect(response.status).toBe(422);
        expect(response.json.errors).toEqual(["image must not be larger than 20MB"]);
      });

      it("refuses truncated image bytes with a 422, storing nothing", async () => {
        const before = await call("GET", "/v1/images?take=100", { key: otherAccountKey });
        const truncated = (await solidImage(300, 300, { r: 1, g: 2, b: 3, alpha: 1 }, "jpeg")).subarray(
          0,
          200,
        );
        const response = await call("POST", "/v1/images/upload", {
          key: otherAccountKey,
          form: uploadForm("t", truncated),
        });
        expect(response.status).toBe(422);
        expect(response.json.errors[0]).toMatch(/^image must be a valid jpeg, png or webp image/);
        const after = await call("GET", "/v1/images?take=100", { key: otherAccountKey });
        expect(after.json.data).toHaveLength(before.json.data.length);
      });

      it("answers a malformed multipart body with 400, not 500", async () => {
        const response = await call("POST", "/v1/images/upload", {
          key: testKey,
          raw: '--xyz\r\nContent-Disposition: form-data; name="name"\r\n\r\nabc',
          contentType: "multipart/form-data; boundary=xyz",
        });
        expect([400, 422]).toContain(response.status);
        expect(response.json.status).toBe(response.status);
      });
    });

    describe("authentication and tenancy", () => {
      it("answers 401 with the same body for a missing, malformed and unknown key", async () => {
        const missing = await call("GET", "/v1/images");
        const malformed = await call("GET", "/v1/images", { key: "nope" });
        const unknown = await call("GET", "/v1/images", { key: `test_${"A".repeat(32)}` });
        for (const response of [missing, malformed, unknown]) {
          expect(response.status).toBe(401);
          expect(response.json).toEqual(missing.json);
          expect(response.header("x-image-processing-usage")).toBe("0");
        }
        expect(missing.json).toMatchObject({
          type: `${ERRORS}unauthorized`,
          error: "Unauthorized",
          status: 401,
        });
        expect(typeof missing.json.message).toBe("string");
      });

      it("answers 403 on another account's image and 404 from the other stage of the same account", async () => {
        const image = await upload(testKey, png);
        const foreign = await call("GET", `/v1/images/${image.id}`, { key: otherAccountKey });
        expect(foreign.status).toBe(403);
        expect(foreign.json).toMatchObject({ error: "Forbidden", status: 403 });
        const foreignTransform = await call("POST", `/v1/images/${image.id}/blur`, {
          key: otherAccountKey,
          json: {},
        });
        expect(foreignTransform.status).toBe(403);
        const otherStage = await call("GET", `/v1/images/${image.id}`, { key: liveKey });
        expect(otherStage.status).toBe(404);
        expect(otherStage.json.message).toBe(`Image with id ${image.id} not found.`);
        const list = await call("GET", "/v1/images?take=100", { key: liveKey });
        expect(list.json.data.map((item: { id: string }) => item.id)).not.toContain(image.id);
      });

      it("serves the OpenAPI 3.1 document without a key, with the mount URL as its server", async () => {
        const response = await call("GET", "/v1/openapi.json");
        expect(response.status).toBe(200);
        expect(response.header("x-image-processing-usage")).toBe("0");
        expect(response.json).toMatchObject({ openapi: "3.1.0", info: { version: "1.0.0" } });
        expect(response.json.servers).toEqual([{ url: base }]);
        expect(Object.keys(response.json.paths)).toEqual(
          expect.arrayContaining(["/v1/images", "/v1/images/upload", "/v1/images/{image_id}/download"]),
        );
        expect(response.json.components.securitySchemes.ApiKeyAuth).toMatchObject({
          type: "apiKey",
          in: "header",
          name: "x-api-key",
        });
      });
    });

    describe("get, list, delete, download", () => {
      it("gets an image and 404s an unknown one with the id in the message; 422 for a malformed id", async () => {
        const image = await upload(testKey, png, "getme");
        const got = await call("GET", `/v1/images/${image.id}`, { key: testKey });
        expect(got.status).toBe(200);
        expect(got.json).toEqual(image);
        const unknownId = "image_zzzzzzzzzzzzzzzzzzzzzzzz";
        const missing = await call("GET", `/v1/images/${unknownId}`, { key: testKey });
        expect(missing.status).toBe(404);
        expect(missing.json).toEqual({
          type: `${ERRORS}not-found`,
          error: "Not Found",
          status: 404,
          message: `Image with id ${unknownId} not found.`,
          code: "IMAGE_NOT_FOUND",
        });
        const malformed = await call("GET", "/v1/images/image_short/download", { key: testKey });
        expect(malformed.status).toBe(422);
        expect(malformed.json.errors).toEqual(["image_id must be a valid image id"]);
      });

      it("lists newest first and walks pages through absolute next/previous links", async () => {
        const key = await current().createKey("live", "lister");
        const ids: string[] = [];
        for (let index = 0; index < 5; index++) ids.push((await upload(key, png, `n${index}`)).id);
        const newestFirst = [...ids].reverse();
        const first = await call("GET", "/v1/images?take=2", { key });
        expect(first.status).toBe(200);
        expect(first.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(0, 2));
        expect(first.json.links.previous).toBeNull();
        expect(first.json.links.next).toBe(`${base}/v1/images?take=2&from=${newestFirst[2]}`);
        const second = await call("GET", first.json.links.next, { key });
        expect(second.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(2, 4));
        expect(second.json.links.previous).toBe(`${base}/v1/images?take=2&from=${newestFirst[0]}`);
        const third = await call("GET", second.json.links.next, { key });
        expect(third.json.data.map((item: { id: string }) => item.id)).toEqual(newestFirst.slice(4));
        expect(third.json.links.next).toBeNull();
        const defaults = await call("GET", "/v1/images?take=undefined&from=undefined", { key });
        expect(defaults.json.data).toHaveLength(5);
      });

      it("validates take and from", async () => {
        const response = await call("GET", "/v1/images?take=0&from=nope", { key: testKey });
        expect(response.status).toBe(422);
        expect(response.json.errors).toEqual([
          "take must be an integer between 1 and 100",
          "from must be a valid image id",
        ]);
        const unknownCursor = await call("GET", "/v1/images?from=image_zzzzzzzzzzzzzzzzzzzzzzzz", {
          key: testKey,
        });
        expect(unknownCursor.status).toBe(422);
        expect(unknownCursor.json.errors).toEqual(["from must be a valid image id"]);
        const tooMany = await call("GET", "/v1/images?take=101", { key: testKey });
        expect(tooMany.status).toBe(422);
      });

      it("downloads the exact bytes with content type and length", async () => {
        const image = await upload(testKey, png, "dl");
        const response = await call("GET", `/v1/images/${image.id}/download`, { key: testKey });
        expect(response.status).toBe(200);
        expect(response.header("content-type")).toBe("image/png");
        expect(Number(response.header("content-length"))).toBe(image.size);
        expect(response.bytes.byteLength).toBe(image.size);
        expect([...response.bytes.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
      });

      it("round-trips binary bodies both ways: the downloaded pixels are the uploaded ones", async () => {
        // A live key: test keys stamp a visible watermark on every image they produce.
        const image = await upload(liveKey, png, "pixels");
        const response = await call("GET", `/v1/images/${image.id}/download`, { key: liveKey });
        const raw = await decodeRaw(response.bytes);
        expect([raw.width, raw.height]).toEqual([64, 32]);
        expect(pixelAt(raw, 2, 2)).toEqual({ r: 255, g: 0, b: 0, a: 255 });
        expect(pixelAt(raw, 61, 29)).toEqual({ r: 0, g: 0, b: 255, a: 255 });
        // Every byte value survives (no text decoding on the way): a JPEG is full of bytes >= 0x80.
        const jpeg = await solidImage(16, 16, Colors.green, "jpeg");
        const uploaded = await upload(liveKey, jpeg, "jpeg");
        const jpegBack = await call("GET", `/v1/images/${uploaded.id}/download`, { key: liveKey });
        expect(jpegBack.header("content-type")).toBe("image/jpeg");
        expect([...jpegBack.bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
        expect((await decodeRaw(jpegBack.bytes)).width).toBe(16);
      });

      it("deletes with 204 and then answers 404 everywhere", async () => {
        const image = await upload(testKey, png, "bye");
        const deleted = await call("DELETE", `/v1/images/${image.id}`, { key: testKey });
        expect(deleted.status).toBe(204);
        expect(deleted.bytes.byteLength).toBe(0);
        expect((await call("DELETE", `/v1/images/${image.id}`, { key: testKey })).status).toBe(404);
        expect((await call("GET", `/v1/images/${image.id}/download`, { key: testKey })).status).toBe(404);
      });
    });

    describe("publish and unpublish", () => {
      it("publishes at a public URL, idempotently, and takes it down on unpublish", async () => {
        const image = await upload(testKey, png, "pub");
        const published = await call("POST", `/v1/images/${image.id}/publish`, { key: testKey });
        expect(published.status).toBe(201);
        expect(published.json.url).toBe(`${current().publicStorageBaseUrl}/images/${image.id}.png`);
        expect(published.header("x-image-processing-usage")).toBe("0");
        const again = await call("POST", `/v1/images/${image.id}/publish`, { key: testKey });
        expect(again.json.url).toBe(published.json.url);

        const fetchPublic = current().fetchPublic;
        if (fetchPublic !== undefined) {
          const publicCopy = await fetchPublic(published.json.url);
          expect(publicCopy.status).toBe(200);
          expect(publicCopy.headers["content-type"]).toBe("image/png");
          expect(publicCopy.headers["cache-control"]).toContain("max-age=31536000");
          const etag = publicCopy.headers.etag;
          expect(etag).toBeTruthy();
          expect(publicCopy.body.byteLength).toBe(image.size);
          const cached = await fetchPublic(published.json.url, { "if-none-match": etag as string });
          expect(cached.status).toBe(304);
          expect((await fetchPublic(`${current().publicStorageBaseUrl}/images/${image.id}`)).status).toBe(
            200,
          );
        }

        const unpublished = await call("POST", `/v1/images/${image.id}/unpublish`, { key: testKey });
        expect(unpublished.status).toBe(201);
        expect(unpublished.json.url).toBeNull();
        if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(404);
        expect((await call("POST", `/v1/images/${image.id}/unpublish`, { key: testKey })).status).toBe(201);
        expect((await call("GET", `/v1/images/${image.id}/download`, { key: testKey })).status).toBe(200);
      });

      it("delivers a variant at a signed URL from signed-url: MISS, HIT, 304, and 404 after delete", async () => {
        const image = await upload(testKey, png, "variant");
        const signed = await call("POST", `/v1/images/${image.id}/signed-url`, {
          key: testKey,
          json: { modifiers: "w_8,fit_fill,h_4", format: "png", expires_in: 600 },
        });
        expect(signed.status, JSON.stringify(signed.json)).toBe(200);
        const base = current().publicStorageBaseUrl;
        expect(signed.json.url.startsWith(`${base}/v/`)).toBe(true);
        const path = signed.json.url.slice(base.length);
        const first = await call("GET", path);
        expect(first.status).toBe(200);
        expect(first.header("content-type")).toBe("image/png");
        expect(first.header("x-cache")).toBe("MISS");
        expect(first.header("x-content-type-options")).toBe("nosniff");
        const metadata = await sharp(first.bytes).metadata();
        expect([metadata.width, metadata.height]).toEqual([8, 4]);
        const second = await call("GET", path);
        expect(second.header("x-cache")).toBe("HIT");
        const etag = second.header("etag")!;
        expect(etag).toBe(first.header("etag"));
        expect((await call("GET", path, { headers: { "if-none-match": etag } })).status).toBe(304);
        const forged = path.replace(
          /\/v\/([^/]+)\//,
          (_match: string, signature: string) => `/v/${signature.split("").reverse().join("")}/`,
        );
        expect((await call("GET", forged)).status).toBe(403);
        expect((await call("DELETE", `/v1/images/${image.id}`, { key: testKey })).status).toBe(204);
        expect((await call("GET", path)).status).toBe(404);
      });

      it("removes the public copy when a published image is deleted", async () => {
        const image = await upload(testKey, png, "pubdel");
        const published = await call("POST", `/v1/images/${image.id}/publish`, { key: testKey });
        expect(published.json.url).toMatch(/^https?:\/\//);
        const fetchPublic = current().fetchPublic;
        if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(200);
        expect((await call("DELETE", `/v1/images/${image.id}`, { key: testKey })).status).toBe(204);
        if (fetchPublic !== undefined) expect((await fetchPublic(published.json.url)).status).toBe(404);
        expect((await call("GET", `/v1/images/${image.id}`, { key: testKey })).status).toBe(404);
      });
    });

    describe("request errors", () => {
      let imageId: string;
      beforeAll(async () => {
        imageId = (await upload(testKey, png, "errors")).id;
      });

      it("answers malformed JSON and an empty JSON body with 400", async () => {
        const malformed = await call("POST", `/v1/images/${imageId}/blur`, {
          key: testKey,
          raw: "{not json",
          contentType: "application/json",
        });
        expect(malformed.status).toBe(400);
        expect(malformed.json).toMatchObject({
          type: `${ERRORS}bad-request`,
          error: "Bad Request",
          status: 400,
        });
        const empty = await call("POST", `/v1/images/${imageId}/blur`, {
          key: testKey,
          raw: "",
          contentType: "application/json",
        });
        expect(empty.status).toBe(400);
      });

      it("accepts {} and no body at all where every field is optional", async () => {
        const withEmptyObject = await call("POST", `/v1/images/${imageId}/blur`, { key: testKey, json: {} });
        expect(withEmptyObject.status).toBe(201);
        const withoutBody = await call("POST", `/v1/images/${imageId}/blur`, { key: testKey });
        expect(withoutBody.status).toBe(201);
        expect(withoutBody.json.id).not.toBe(imageId);
      });

      it("lists every failing field of path and body in one 422", async () => {
        const response = await call("POST", `/v1/images/${imageId}/resize`, {
          key: testKey,
          json: {
            width: 0,
            height: 20.5,
            fit: "stretch",
            position: "middle",
            letterbox_color: "nope",
            name: "",
          },
        });
        expect(response.status).toBe(422);
        expect(response.json.errors).toEqual([
          "width must be an integer between 1 and 10000",
          "height must be an integer between 1 and 10000",
          "fit must be one of: fill, contain, cover",
          "position must be one of: center, top, right, bottom, left, top-left, top-right, bottom-left, bottom-right, entropy, attention",
          "letterbox_color must be a CSS colour name, #rgb, #rrggbb, #rrggbbaa or transparent",
          "name must be between 1 and 30 characters long",
        ]);
      });

      it("refuses outputs over 10,000 px and crop boxes outside the image", async () => {
        const resize = await call("POST", `/v1/images/${imageId}/resize`, {
          key: testKey,
          json: { height: 10000 },
        });
        expect(resize.status).toBe(422);
        expect(resize.json.errors[0]).toMatch(
          /^height must result in an image of at most 10000 x 10000 pixels/,
        );
        const crop = await call("POST", `/v1/images/${imageId}/crop`, {
          key: testKey,
          json: { x1: 10, y1: 0, x2: 5, y2: 100 },
        });
        expect(crop.status).toBe(422);
        expect(crop.json.errors).toEqual([
          "x2 must be greater than x1 (10)",
          "y2 must be at most the image height (32)",
        ]);
      });

      it("enforces the SDK's integer rules: crop x1 0.5, modulate hue 120.5, convert quality 101", async () => {
        const crop = await call("POST", `/v1/images/${imageId}/crop`, {
          key: testKey,
          json: { x1: 0.5, y1: 0, x2: 10, y2: 10 },
        });
        expect(crop.json.errors).toEqual(["x1 must be an integer"]);
        const hue = await call("POST", `/v1/images/${imageId}/modulate`, {
          key: testKey,
          json: { hue: 120.5 },
        });
        expect(hue.json.errors).toEqual(["hue must be an integer between -360 and 360"]);
        const sdkModulate = await call("POST", `/v1/images/${imageId}/modulate`, {
          key: testKey,
          json: { brightness: 0.5, saturation: 0.5, hue: 120 },
        });
        expect(sdkModulate.status).toBe(201);
        const quality = await call("POST", `/v1/images/${imageId}/convert`, {
          key: testKey,
          json: { format: "jpeg", quality: 101 },
        });
        expect(quality.json.errors).toEqual(["quality must be an integer between 1 and 100"]);
        const noAdjustment = await call("POST", `/v1/images/${imageId}/modulate`, { key: testKey, json: {} });
        expect(noAdjustment.status).toBe(422);
      });

      it("answers a JSON route sent text/plain with 400 and a body that is not an object with 422", async () => {
        const textPlain = await call("POST", `/v1/images/${imageId}/mirror`, {
          key: testKey,
          raw: "mode=both",
          contentType: "text/plain",
        });
        expect(textPlain.status).toBe(400);
        const array = await call("POST", `/v1/images/${imageId}/mirror`, { key: testKey, json: [1, 2] });
        expect(array.status).toBe(422);
        expect(array.json.errors).toEqual(["body must be a JSON object"]);
      });

      it("answers a watermark with an unknown overlay id with 404 naming it", async () => {
        const overlayId = "image_qqqqqqqqqqqqqqqqqqqqqqqq";
        const response = await call("POST", `/v1/images/${imageId}/watermark`, {
          key: testKey,
          json: { watermarks: [{ id: overlayId }] },
        });
        expect(response.status).toBe(404);
        expect(response.json.message).toBe(`Image with id ${overlayId} not found.`);
      });

      it("validates the create-from-URL body, listing every failing field", async () => {
        const invalid = await call("POST", "/v1/images", { key: testKey, json: { url: 3 } });
        expect(invalid.status).toBe(422);
        expect(invalid.json.errors).toEqual(["name is required", "url must be a string"]);
        // A URL outside every allowed origin is refused on `url` before any request is made.
        const foreign = await call("POST", "/v1/images", {
          key: testKey,
          json: { name: "x", url: "https://pixport-conformance.invalid/a.png" },
        });
        expect(foreign.status).toBe(422);
        expect(foreign.json.errors[0]).toMatch(/^url /);
      });

      it("answers unknown routes with a JSON 404 and wrong methods with 405", async () => {
        const unknown = await call("GET", "/v1/nothing", { key: testKey });
        expect(unknown.status).toBe(404);
        expect(unknown.json).toMatchObject({
          status: 404,
          error: "Not Found",
          type: "https://docs.img-processing.com/errors/not-found",
          code: "ROUTE_NOT_FOUND",
        });
        expect(unknown.json.message).toBe("Route GET /v1/nothing not found.");
        const wrongMethod = await call("PUT", `/v1/images/${imageId}`, { key: testKey });
        expect(wrongMethod.status).toBe(405);
        expect(wrongMethod.header("allow")).toContain("GET");
      });
    });

    options.extraTests?.(current);
  });
}
