import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import {
  ErrorCodes,
  ImagePipelineError,
  isImagePipelineError,
  type OriginAnswer,
  type OriginSource,
  sniffImageFormat,
} from "@pixport/core";
import {
  cacheControlMaxAge,
  type OriginGetRequest,
  type OriginValidators,
  originError,
  originNotImage,
  originTooLarge,
  parseOptions,
} from "@pixport/core/adapter-kit";
import { z } from "zod";
import { blockedAddressReason } from "./ip-address.js";

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
  /** Deadline to open the connection of one hop, ms. @default 5000 */
  connectTimeoutMs: z.number().int().min(10).max(120_000).default(5000),
  /** Largest accepted response head, bytes. @default 16384 */
  maxHeaderBytes: z.number().int().min(1024).max(1_048_576).default(16_384),
  /** `User-Agent` of the requests. @default "pixport-origin" */
  userAgent: z.string().min(1).max(200).default("pixport-origin"),
  /** Extra trusted CA certificates (PEM) for an https origin. @default the Node.js root store */
  ca: z.union([z.string(), z.array(z.string())]).optional(),
  /** Decides which addresses may be connected to (tests); overrides `allowPrivateNetwork`. */
  addressPolicy: z.custom<(address: string) => string | null>(isFunction, "must be a function").optional(),
});
export type HttpOriginSourceOptions = z.input<typeof httpOriginSourceOptionsSchema>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const timeoutError = (what: string) =>
  new ImagePipelineError(ErrorCodes.ORIGIN_TIMEOUT, `The origin did not ${what} in time.`);

/**
 * An origin source on an HTTP(S) server: `{path}` is appended to `baseUrl`, each segment encoded
 * again. Requests carry only `Accept`, `Accept-Encoding: identity`, `User-Agent`, the configured
 * headers and, to revalidate, `If-None-Match`/`If-Modified-Since`; nothing of the client's request
 * is forwarded. Every address connected to is checked (public only, unless `allowPrivateNetwork`),
 * through the name look-up the connection itself uses, so DNS rebinding cannot swap it. Redirects
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
  const refused = (address: string) =>
    originError(
      "The origin resolves to an address this server may not connect to.",
      new Error(`${address}: ${policy(address)}`),
    );

  /** The name look-up of every connection: all answers checked, the first one used. */
  const lookup = (
    hostname: string,
    _options: unknown,
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, answers) => {
      if (error !== null) return callback(error, []);
      const bad = answers.find((answer) => policy(answer.address) !== null);
      if (bad !== undefined) return callback(refused(bad.address), []);
      const first = answers[0];
      if (first === undefined) return callback(new Error(`${hostname} has no address`), []);
      callback(null, [first]);
    });
  };

  const allowedType = (declared: string | undefined) => {
    if (declared === undefined || declared === "") return true;
    const type = declared.split(";")[0]!.trim().toLowerCase();
    return config.contentTypes.some((pattern) =>
      pattern.endsWith("/*") ? type.startsWith(pattern.slice(0, -1)) : type === pattern,
    );
  };

  function send(url: URL, request: OriginGetRequest): Promise<IncomingMessage> {
    const literal = url.hostname.replace(/^\[(.*)\]$/, "$1");
    if (isIP(literal) !== 0 && policy(literal) !== null) return Promise.reject(refused(literal));
    const validators = request.validators ?? {};
    return new Promise((resolve, reject) => {
      const outgoing = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
        method: "GET",
        headers: {
          ...config.headers,
          Accept: "image/*",
          "Accept-Encoding": "identity",
          "User-Agent": config.userAgent,
          ...(validators.etag === undefined ? {} : { "If-None-Match": validators.etag }),
          ...(validators.lastModified === undefined ? {} : { "If-Modified-Since": validators.lastModified }),
        },
        agent: false,
        lookup: lookup as never,
        maxHeaderSize: config.maxHeaderBytes,
        ...(config.ca === undefined ? {} : { ca: config.ca }),
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      });
      const connectTimer = setTimeout(
        () => outgoing.destroy(timeoutError("accept the connection")),
        config.connectTimeoutMs,
      );
      outgoing.once("socket", (socket) => {
        const connected = () => {
          clearTimeout(connectTimer);
          // Defence in depth: the peer actually connected must pass the same policy.
          const peer = socket.remoteAddress ?? "";
          if (policy(peer) !== null) outgoing.destroy(refused(peer));
        };
        if (socket.connecting) socket.once("connect", connected);
        else connected();
      });
      outgoing.once("response", (response) => {
        clearTimeout(connectTimer);
        resolve(response);
      });
      outgoing.once("error", (error) => {
        clearTimeout(connectTimer);
        reject(error);
      });
      outgoing.end();
    });
  }

  const nextHop = (from: URL, location: string | undefined): URL => {
    let next: URL;
    try {
      next = new URL(location ?? "", from);
    } catch (error) {
      throw originError("The origin redirected to an invalid location.", error);
    }
    const sameOrigin = next.origin === base.origin;
    if (!sameOrigin && !(/^https?:$/.test(next.protocol) && config.redirectHosts.includes(next.hostname))) {
      throw originError("The origin redirected off its host.", new Error(`to ${next.origin}`));
    }
    if (next.username !== "" || next.password !== "")
      throw originError("The origin redirected to a URL with credentials.");
    return next;
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
        url = nextHop(url, response.headers.location);
        continue;
      }
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
      if (!allowedType(response.headers["content-type"])) {
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
      return { status: "found", data: await readBody(response, request.maxBytes), validators, maxAgeSeconds };
    }
  }

  return {
    kind: "http",
    async get(request) {
      try {
        return await get(request);
      } catch (error) {
        // The caller's deadline explains whatever the aborted connection reported.
        if (request.signal?.aborted) throw request.signal.reason ?? timeoutError("answer");
        if (isImagePipelineError(error)) throw error;
        throw originError("The origin could not be reached or failed.", error);
      }
    },
  };
}

/** The body up to `maxBytes` (the declared length is checked first, never trusted), sniffed early. */
function readBody(response: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    return Promise.reject(originTooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const stop = (error: Error | null) => {
      if (settled) return;
      settled = true;
      if (error !== null) {
        response.destroy();
        reject(error);
        return;
      }
      resolve(new Uint8Array(Buffer.concat(chunks, total)));
    };
    const sniff = () => sniffImageFormat(Buffer.concat(chunks, total)) !== null;
    response.on("data", (chunk: Buffer) => {
      if (settled) return;
      const before = total;
      total += chunk.byteLength;
      if (total > maxBytes) return stop(originTooLarge(maxBytes));
      chunks.push(chunk);
      if (before < 12 && total >= 12 && !sniff()) stop(originNotImage());
    });
    response.once("end", () => (total < 12 && !sniff() ? stop(originNotImage()) : stop(null)));
    response.once("error", (error) => stop(error));
    response.once("aborted", () =>
      stop(originError("The origin closed the connection before the body was complete.")),
    );
  });
}
