import { lookup as dnsLookup } from "node:dns/promises";
import type { IncomingMessage } from "node:http";
import {
  type ErrorCode,
  ErrorCodes,
  type FetchedImage,
  IMAGE_FORMATS,
  type ImageFetcher,
  type ImageFetchRequest,
  isImagePipelineError,
} from "@pixport/core";
import { MIME_TYPES, parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { type AddressPolicy, type ConnectorOptions, getThrough, type HostResolver } from "./connect.js";
import { fail, notHttps, sourceConnectErrors, startDeadline, translate } from "./fetch-errors.js";
import { blockedAddressReason } from "./ip-address.js";
import { readBody } from "./read-body.js";

export type { AddressPolicy, HostResolver, ResolvedAddress } from "./connect.js";

const isFunction = (value: unknown) => typeof value === "function";

/** Options of {@link createNodeImageFetcher}. Everything has a production default. */
export const nodeImageFetcherOptionsSchema = z.object({
  /**
   * Resolves host names. Every answer is checked; one non-public address refuses the host.
   * @default `dns.lookup(hostname, { all: true })`
   */
  resolve: z.custom<HostResolver>(isFunction, "must be a function").optional(),
  /**
   * Which addresses may be connected to. Tests use it to allow a loopback test server for chosen
   * host names only.
   * @default public unicast only (see `blockedAddressReason`)
   */
  addressPolicy: z.custom<AddressPolicy>(isFunction, "must be a function").optional(),
  /** Extra trusted CA certificates (PEM). @default the Node.js root store */
  ca: z
    .union([z.string(), z.instanceof(Uint8Array), z.array(z.union([z.string(), z.instanceof(Uint8Array)]))])
    .optional(),
  /** TCP port connected to (URLs never carry a port; the policy refuses them). @default 443 */
  port: z.number().int().min(1).max(65535).default(443),
  /** Largest accepted response head, bytes. @default 16384 */
  maxHeaderBytes: z.number().int().min(1024).max(1_048_576).default(16_384),
  /** `User-Agent` of the requests. @default "pixport-url-import" */
  userAgent: z.string().min(1).max(200).default("pixport-url-import"),
});

export type NodeImageFetcherOptions = z.input<typeof nodeImageFetcherOptionsSchema>;

/** Every format pixport reads, so an origin that negotiates may answer with any of them. */
const ACCEPTED_TYPES = IMAGE_FORMATS.map((format) => MIME_TYPES[format]).join(", ");

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const defaultResolve: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * An `ImageFetcher` on `node:https` that refuses every non-public destination at the socket level.
 *
 * - Each hop resolves the host itself (all A/AAAA answers; one non-public answer refuses the
 *   host), then opens the TLS connection to the *validated IP literal* with SNI and certificate
 *   checks on the host name: no second look-up can happen, so DNS rebinding cannot change the
 *   destination. IP-literal URLs are checked the same way, and the connected peer address is
 *   checked again once the TCP connection is up.
 * - Redirects are followed manually (the request's `maxRedirects` and `checkRedirect`).
 * - Sends only `Host`, `Accept`, `Accept-Encoding: identity` and `User-Agent`; never forwards
 *   inbound headers. A body compressed anyway is decoded with the size cap counted on decoded
 *   bytes. The response head is capped (`maxHeaderBytes`).
 * - `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY` are ignored: a proxy would see the destination instead
 *   of this process, so the address checks would be checking the proxy. Deploy egress filtering
 *   in the network as well if you need a proxy.
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({ ...deps, fetcher: createNodeImageFetcher() });
 * ```
 */
export function createNodeImageFetcher(options: NodeImageFetcherOptions = {}): ImageFetcher {
  const config = parseOptions(nodeImageFetcherOptionsSchema, options, "fetcher");
  const settings: FetcherSettings = {
    resolve: config.resolve ?? defaultResolve,
    addressPolicy: config.addressPolicy ?? ((address) => blockedAddressReason(address)),
    allowPlainHttp: false,
    ca: config.ca as string | Buffer | (string | Buffer)[] | undefined,
    port: config.port,
    maxHeaderBytes: config.maxHeaderBytes,
    userAgent: config.userAgent,
  };
  return {
    name: "node",
    fetch: (request) => fetchImage(settings, request),
  };
}

/** The parsed options: how to connect (all but what each request sets), and the request's head. */
interface FetcherSettings extends Omit<ConnectorOptions, "connectTimeoutMs" | "errors"> {
  userAgent: string;
}

/** One fetch: each hop requested and checked, redirects followed, the body read under the deadline. */
async function fetchImage(settings: FetcherSettings, request: ImageFetchRequest): Promise<FetchedImage> {
  const deadline = startDeadline(request.timeoutMs);
  try {
    let url = request.url;
    for (let hop = 0; ; hop++) {
      const response = await requestOnce(settings, url, request, deadline.signal);
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        response.destroy();
        const location = response.headers.location;
        if (location === undefined || location === "") {
          throw fail(
            ErrorCodes.SOURCE_ERROR,
            `could not be fetched (the source answered ${status} without a location)`,
          );
        }
        if (hop >= request.maxRedirects) {
          throw fail(
            ErrorCodes.SOURCE_ERROR,
            `could not be fetched (the source redirected more than ${request.maxRedirects} times)`,
          );
        }
        const next = request.checkRedirect(location, url);
        if (!next.ok) throw fail(next.code as ErrorCode, next.message);
        url = next.url;
        continue;
      }
      if (status >= 400 && status < 500) {
        response.destroy();
        throw fail(
          ErrorCodes.SOURCE_NOT_ACCESSIBLE,
          `is not accessible (the source answered ${status}); it must be public or pre-signed`,
        );
      }
      if (status !== 200) {
        response.destroy();
        throw fail(ErrorCodes.SOURCE_ERROR, `could not be fetched (the source answered ${status})`);
      }
      return { data: await readBody(response, request, deadline), url };
    }
  } catch (error) {
    if (
      deadline.signal.aborted &&
      !(isImagePipelineError(error) && error.code !== ErrorCodes.SOURCE_TIMEOUT)
    ) {
      throw deadline.error;
    }
    throw translate(error);
  } finally {
    deadline.clear();
  }
}

/** One hop: an https URL on the default port without credentials, over the checked connection. */
function requestOnce(
  settings: FetcherSettings,
  url: string,
  request: ImageFetchRequest,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const target = new URL(url);
  if (
    target.protocol !== "https:" ||
    target.username !== "" ||
    target.password !== "" ||
    target.port !== ""
  ) {
    return Promise.reject(notHttps());
  }
  const connector: ConnectorOptions = {
    ...settings,
    connectTimeoutMs: request.connectTimeoutMs,
    errors: sourceConnectErrors(request.connectTimeoutMs),
  };
  const headers = {
    Accept: ACCEPTED_TYPES,
    "Accept-Encoding": "identity",
    "User-Agent": settings.userAgent,
    Connection: "close",
  };
  return getThrough(connector, target, headers, signal);
}
