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
import { describe } from "vitest";
import { createMemoryOriginSource } from "../memory-origin-source.js";
import { createHttpSuite } from "./http-binding-client.js";
import { describeRequestErrors } from "./http-binding-errors.js";
import { describeAuthentication, describeUpload } from "./http-binding-images.js";
import { describeOriginDelivery } from "./http-binding-origins.js";
import { describePublishing, describeReadAndDelete } from "./http-binding-resources.js";

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
  /** The origin the suite's origin-image variants come from (`/v/{signature}/o/{name}/...`). */
  origin: BindingOrigin;
  /**
   * Fetches a published URL without a key. Only deployments that serve their public copies (the
   * prebuilt server) provide it; a binding alone does not serve them (a CDN or the host app does),
   * so without it the suite checks the URLs but not what is served under them.
   */
  fetchPublic?: (url: string, headers?: Record<string, string>) => Promise<HttpBindingResponse>;
}

/** An origin of origin-image delivery mounted with the binding, and how to put an image on it. */
export interface BindingOrigin {
  /** Its name in `delivery.origins`. */
  name: string;
  /** The delivery signing secret its URLs are signed with. */
  secret: string;
  /** Stores `data` at `path` (`/`-separated, unencoded segments) on the origin. */
  put(path: string, data: Uint8Array): Promise<void>;
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
  /** An in-memory origin named `binding`, signed with {@link BINDING_DELIVERY_SECRET}. */
  origin: BindingOrigin;
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
  const originSource = createMemoryOriginSource();
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
      origins: { binding: originSource },
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
    origin: {
      name: "binding",
      secret: BINDING_DELIVERY_SECRET,
      put: async (path, data) => originSource.put(path, data),
    },
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
    const suite = createHttpSuite(options);
    describeUpload(suite);
    describeAuthentication(suite);
    describeReadAndDelete(suite);
    describePublishing(suite);
    describeOriginDelivery(suite);
    describeRequestErrors(suite);
    options.extraTests?.(suite.current);
  });
}
