import { lookup as dnsLookup } from "node:dns/promises";
import type { IncomingMessage } from "node:http";
import {
  ErrorCodes,
  ImagePipelineError,
  isImagePipelineError,
  type OriginAnswer,
  type OriginSource,
} from "@pixport/core";
import {
  cacheControlMaxAge,
  type OriginGetRequest,
  type OriginValidators,
  originError,
  parseOptions,
} from "@pixport/core/adapter-kit";
import { z } from "zod";
import { type ConnectErrors, type ConnectorOptions, getThrough, type HostResolver } from "./connect.js";
import { blockedAddressReason } from "./ip-address.js";
import { readOriginBody } from "./origin-body.js";

const isFunction = (value: unknown) => typeof value === "function";

/** Options of {@link createHttpOriginSource}. */
export const httpOriginSourceOptionsSchema = z.strictObject({
  /** The origin's base URL; an object's URL is the base followed by its encoded path. */
  baseUrl: z.url({ protocol: /^https?$/ }).refine((value) => {
    const url = new URL(value);
    return url.username === "" && url.password === "" && url.search === "" && url.hash === "";
  }, "must be an http(s) URL without credentials, query or fragment"),
  /** Headers sent with every request, e.g. `Authorization` of a private origin. @default {} */
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(4096)).default({}),
  /**
   * Declared `Content-Type`s accepted (`type/*` wildcards allowed); others are refused (502)
   * before the body is read. The bytes are sniffed as well, whatever the type says.
   * @default ["image/*", "application/octet-stream", "binary/octet-stream"]
   */
  contentTypes: z
    .array(z.string().regex(/^[a-z0-9.+-]+\/([a-z0-9.+-]+|\*)$/))
    .min(1)
    .default(["image/*", "application/octet-stream", "binary/octet-stream"]),
  /** Redirects followed at most; each stays on the origin's scheme, host and port, or one of `redirectHosts`. @default 3 */
  maxRedirects: z.number().int().min(0).max(10).default(3),
  /** Host names a redirect may also lead to (exact names). @default [] */
  redirectHosts: z.array(z.string().min(1).max(253)).default([]),
  /**
   * Allow loopback, private and link-local addresses (an origin on your own network). Off, every
   * address connected to must be public, checked on the address actually connected to. @default false
   */
  allowPrivateNetwork: z.boolean().default(false),
  /** Deadline to open the connection of one hop (name look-up, TCP and TLS), ms. @default 5000 */
  connectTimeoutMs: z.number().int().min(10).max(120_000).default(5000),
  /** Largest accepted response head, bytes. @default 16384 */
  maxHeaderBytes: z.number().int().min(1024).max(1_048_576).default(16_384),
  /** `User-Agent` of the requests. @default "pixport-origin" */
  userAgent: z.string().min(1).max(200).default("pixport-origin"),
  /** Extra trusted CA certificates (PEM) for an https origin. @default the Node.js root store */
  ca: z.union([z.string(), z.array(z.string())]).optional(),
  /**
   * Resolves host names (tests); every answer is checked, one refused answer refuses the host.
   * @default `dns.lookup(hostname, { all: true })`
   */
  resolve: z.custom<HostResolver>(isFunction, "must be a function").optional(),
  /** Decides which addresses may be connected to (tests); overrides `allowPrivateNetwork`. */
  addressPolicy: z.custom<(address: string) => string | null>(isFunction, "must be a function").optional(),
});
export type HttpOriginSourceOptions = z.input<typeof httpOriginSourceOptionsSchema>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const originTimeout = (what: string) =>
  new ImagePipelineError(ErrorCodes.ORIGIN_TIMEOUT, `The origin did not ${what} in time.`);

/** An origin's connection errors, in the `ORIGIN_*` family. */
const ORIGIN_CONNECT_ERRORS: ConnectErrors = {
  scheme: (url) => originError(`The origin's URL is not http or https (${url.protocol}).`),
  blocked: (address, _hostname, reason) =>
    originError(
      "The origin resolves to an address this server may not connect to.",
      new Error(`${address}: ${reason}`),
    ),
  noAddress: (hostname) => new Error(`${hostname} has no address`),
  timeout: () => originTimeout("accept the connection"),
};

/**
 * An origin source on an HTTP(S) server: `{path}` is appended to `baseUrl`, each segment encoded
 * again. Requests carry only `Accept`, `Accept-Encoding: identity`, `User-Agent`, the configured
 * headers and, to revalidate, `If-None-Match`/`If-Modified-Since`; nothing of the client's request
 * is forwarded. Every address of the host is checked (public only, unless `allowPrivateNetwork`)
 * and the connection made to the checked address itself, as the URL fetcher does, so DNS
 * rebinding cannot swap it; the peer connected is checked again. Redirects
 * are followed by hand and only on the origin (or to `redirectHosts`); the byte limit is counted
 * as the body arrives, the declared type must be allowed and the first bytes an image's.
 *
 * @example
 * ```ts
 * const origins = { cms: createHttpOriginSource({ baseUrl: "https://cms.example.com/media/" }) };
 * ```
 */
export function createHttpOriginSource(options: HttpOriginSourceOptions): OriginSource {
  const config = parseOptions(httpOriginSourceOptionsSchema, options, "createHttpOriginSource");
  const base = new URL(config.baseUrl.endsWith("/") ? config.baseUrl : `${config.baseUrl}/`);
  const policy =
    config.addressPolicy ??
    ((address: string) => (config.allowPrivateNetwork ? null : blockedAddressReason(address)));
  const connector: ConnectorOptions = {
    resolve: config.resolve ?? ((hostname) => dnsLookup(hostname, { all: true, verbatim: true })),
    addressPolicy: (address) => policy(address),
    allowPlainHttp: true,
    ca: config.ca,
    connectTimeoutMs: config.connectTimeoutMs,
    maxHeaderBytes: config.maxHeaderBytes,
    errors: ORIGIN_CONNECT_ERRORS,
  };
  /** One GET of `url`: the configured headers, then the request's own, revalidation included. */
  const send = (url: URL, request: OriginGetRequest) => {
    const validators = request.validators ?? {};
    const headers = {
      ...config.headers,
      Accept: "image/*",
      "Accept-Encoding": "identity",
      "User-Agent": config.userAgent,
      ...(validators.etag === undefined ? {} : { "If-None-Match": validators.etag }),
      ...(validators.lastModified === undefined ? {} : { "If-Modified-Since": validators.lastModified }),
    };
    return getThrough(connector, url, headers, request.signal);
  };

  async function get(request: OriginGetRequest): Promise<OriginAnswer> {
    let url = new URL(request.segments.map(encodeURIComponent).join("/"), base);
    for (let hop = 0; ; hop++) {
      const response = await send(url, request);
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        response.destroy();
        if (hop >= config.maxRedirects)
          throw originError(`The origin redirected more than ${config.maxRedirects} times.`);
        url = nextHop(base, config.redirectHosts, url, response.headers.location);
        continue;
      }
      return answerOf(response, request, config.contentTypes);
    }
  }

  return {
    kind: "http",
    async get(request) {
      try {
        return await get(request);
      } catch (error) {
        // The caller's deadline explains whatever the aborted connection reported.
        if (request.signal?.aborted) throw request.signal.reason ?? originTimeout("answer");
        if (isImagePipelineError(error)) throw error;
        throw originError("The origin could not be reached or failed.", error);
      }
    },
  };
}

/** Whether a declared `Content-Type` is one of `contentTypes` (`type/*` wildcards); none declared passes. */
function allowedType(contentTypes: readonly string[], declared: string | undefined): boolean {
  if (declared === undefined || declared === "") return true;
  const type = declared.split(";")[0]!.trim().toLowerCase();
  return contentTypes.some((pattern) =>
    pattern.endsWith("/*") ? type.startsWith(pattern.slice(0, -1)) : type === pattern,
  );
}

/** The next hop of a redirect: on the origin's scheme, host and port, or to one of `redirectHosts`. */
function nextHop(base: URL, redirectHosts: readonly string[], from: URL, location: string | undefined): URL {
  let next: URL;
  try {
    next = new URL(location ?? "", from);
  } catch (error) {
    throw originError("The origin redirected to an invalid location.", error);
  }
  const sameOrigin = next.origin === base.origin;
  if (!sameOrigin && !(/^https?:$/.test(next.protocol) && redirectHosts.includes(next.hostname))) {
    throw originError("The origin redirected off its host.", new Error(`to ${next.origin}`));
  }
  if (next.username !== "" || next.password !== "")
    throw originError("The origin redirected to a URL with credentials.");
  return next;
}

/** The answer of a final (not redirecting) response: not-modified, not-found, or the checked body. */
async function answerOf(
  response: IncomingMessage,
  request: OriginGetRequest,
  contentTypes: readonly string[],
): Promise<OriginAnswer> {
  const status = response.statusCode ?? 0;
  const validators: OriginValidators = {
    etag: response.headers.etag,
    lastModified: response.headers["last-modified"],
  };
  const maxAgeSeconds = cacheControlMaxAge(response.headers["cache-control"]);
  if (status === 304 && request.validators !== undefined) {
    response.destroy();
    return {
      status: "not-modified",
      validators: {
        etag: validators.etag ?? request.validators.etag,
        lastModified: validators.lastModified ?? request.validators.lastModified,
      },
      maxAgeSeconds,
    };
  }
  if (status === 404 || status === 410) {
    response.destroy();
    return { status: "not-found" };
  }
  if (status !== 200) {
    response.destroy();
    throw originError(`The origin answered ${status}.`);
  }
  if (!allowedType(contentTypes, response.headers["content-type"])) {
    response.destroy();
    throw originError(
      `The origin answered ${response.headers["content-type"]}, not an image type it may send.`,
    );
  }
  const encoding = String(response.headers["content-encoding"] ?? "identity").toLowerCase();
  if (encoding !== "identity" && encoding !== "") {
    response.destroy();
    throw originError("The origin sent a compressed body although asked for none.");
  }
  return {
    status: "found",
    data: await readOriginBody(response, request.maxBytes),
    validators,
    maxAgeSeconds,
  };
}
