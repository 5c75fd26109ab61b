import { lookup as dnsLookup } from "node:dns/promises";
import type { IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type Socket } from "node:net";
import type { Readable, Transform } from "node:stream";
import { connect as tlsConnect } from "node:tls";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import {
  type ErrorCode,
  ErrorCodes,
  type FetchedImage,
  IMAGE_FORMATS,
  type ImageFetcher,
  type ImageFetchRequest,
  ImagePipelineError,
  isImagePipelineError,
  sniffImageFormat,
} from "@pixport/core";
import { acceptedFormats, formatBytes, MIME_TYPES, parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { blockedAddressReason } from "./ip-address.js";

/** One resolved address, as `dns.lookup(name, { all: true })` returns it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (A and AAAA). */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Decides whether an address may be connected to. `hostname` is the name being fetched (the
 * address itself for IP-literal URLs). Returns `null` to allow or a reason to refuse.
 */
export type AddressPolicy = (address: string, context: { hostname: string }) => string | null;

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

const fail = (code: ErrorCode, message: string, cause?: unknown) =>
  new ImagePipelineError(code, message, cause === undefined ? {} : { cause });

const seconds = (ms: number) => `${ms % 1000 === 0 ? ms / 1000 : (ms / 1000).toFixed(1)}s`;

const defaultResolve: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Turns a Node error into the port's error with a client-safe message (details stay in `cause`). */
function translate(error: unknown): ImagePipelineError {
  if (isImagePipelineError(error)) return error;
  const code = String((error as { code?: unknown })?.code ?? "");
  if (/^(ENOTFOUND|EAI_AGAIN|EAI_NODATA|EAI_NONAME|ENODATA|ESERVFAIL|ENOTIMP)$/.test(code)) {
    return fail(
      ErrorCodes.SOURCE_UNREACHABLE,
      "could not be reached (its host name does not resolve)",
      error,
    );
  }
  if (/^(ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EADDRNOTAVAIL|ECONNRESET|EPIPE|ETIMEDOUT)$/.test(code)) {
    return fail(ErrorCodes.SOURCE_UNREACHABLE, "could not be reached (the connection failed)", error);
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|EPROTO/.test(code)) {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched securely (the TLS connection or certificate was not valid for the host)",
      error,
    );
  }
  if (code.startsWith("HPE_")) {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched (the source sent an invalid or oversized response)",
      error,
    );
  }
  if (code.startsWith("Z_") || code === "ERR_ZLIB_INITIALIZATION_FAILED") {
    return fail(
      ErrorCodes.SOURCE_ERROR,
      "could not be fetched (the source sent an invalid compressed body)",
      error,
    );
  }
  return fail(ErrorCodes.SOURCE_ERROR, "could not be fetched (the source failed)", error);
}

/** The deadline of one fetch: a signal plus the error that explains it. */
function startDeadline(timeoutMs: number) {
  const controller = new AbortController();
  const error = fail(ErrorCodes.SOURCE_TIMEOUT, `did not answer within ${seconds(timeoutMs)}`);
  const timer = setTimeout(() => controller.abort(error), timeoutMs);
  return { signal: controller.signal, error, clear: () => clearTimeout(timer) };
}

type Deadline = ReturnType<typeof startDeadline>;

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
  const resolve = config.resolve ?? defaultResolve;
  const addressPolicy: AddressPolicy = config.addressPolicy ?? ((address) => blockedAddressReason(address));
  const ca = config.ca as string | Buffer | (string | Buffer)[] | undefined;

  const blocked = (address: string, hostname: string, cause?: unknown) =>
    fail(
      ErrorCodes.SOURCE_UNREACHABLE,
      "could not be reached (its host resolves to a non-public address)",
      cause ?? new Error(`${hostname} -> ${address}: ${addressPolicy(address, { hostname })}`),
    );

  /** Resolves and validates, then connects to the validated address; calls back with the TLS socket. */
  function connect(
    hostname: string,
    request: ImageFetchRequest,
    deadline: Deadline,
    callback: (error: Error | null, socket?: Socket) => void,
  ): void {
    let socket: Socket | undefined;
    let done = false;
    const finish = (error: Error | null, value?: Socket) => {
      if (done) return;
      done = true;
      callback(error, value);
    };
    const connectError = fail(
      ErrorCodes.SOURCE_TIMEOUT,
      `did not connect within ${seconds(request.connectTimeoutMs)}`,
    );
    const timer = setTimeout(() => {
      socket?.destroy(connectError);
      finish(connectError);
    }, request.connectTimeoutMs);
    const literal = isIP(hostname) !== 0;
    (async () => {
      const answers = literal ? [{ address: hostname, family: isIP(hostname) }] : await resolve(hostname);
      if (deadline.signal.aborted || done) {
        clearTimeout(timer);
        return;
      }
      if (answers.length === 0) {
        throw fail(ErrorCodes.SOURCE_UNREACHABLE, "could not be reached (its host name does not resolve)");
      }
      // One non-public answer refuses the host: no happy-eyeballs choice can pick a private one.
      for (const answer of answers) {
        if (addressPolicy(answer.address, { hostname }) !== null) throw blocked(answer.address, hostname);
      }
      const target = (answers[0] as ResolvedAddress).address;
      const tlsSocket = tlsConnect({
        host: target,
        port: config.port,
        // SNI and the certificate check use the host name, never the address (no IP SNI).
        ...(literal ? {} : { servername: hostname }),
        ca,
        minVersion: "TLSv1.2",
        ALPNProtocols: ["http/1.1"],
      });
      socket = tlsSocket;
      tlsSocket.once("connect", () => {
        // Defence in depth: the peer actually connected must pass the same policy.
        const peer = tlsSocket.remoteAddress ?? "";
        if (addressPolicy(peer, { hostname }) !== null) tlsSocket.destroy(blocked(peer, hostname));
      });
      tlsSocket.once("secureConnect", () => clearTimeout(timer));
      tlsSocket.once("close", () => clearTimeout(timer));
      finish(null, tlsSocket);
    })().catch((error: unknown) => {
      clearTimeout(timer);
      finish(error instanceof Error ? error : new Error(String(error)));
    });
  }

  function requestOnce(
    url: string,
    request: ImageFetchRequest,
    deadline: Deadline,
  ): Promise<IncomingMessage> {
    return new Promise((resolveResponse, reject) => {
      const target = new URL(url);
      if (
        target.protocol !== "https:" ||
        target.username !== "" ||
        target.password !== "" ||
        target.port !== ""
      ) {
        reject(
          fail(ErrorCodes.URL_NOT_ALLOWED, "must be an https URL on the default port without credentials"),
        );
        return;
      }
      const hostname = target.hostname.replace(/^\[(.*)\]$/, "$1");
      const outgoing = httpsRequest({
        host: hostname,
        port: config.port,
        method: "GET",
        path: `${target.pathname}${target.search}`,
        headers: {
          Host: target.host,
          Accept: ACCEPTED_TYPES,
          "Accept-Encoding": "identity",
          "User-Agent": config.userAgent,
          Connection: "close",
        },
        maxHeaderSize: config.maxHeaderBytes,
        // No agent: no pooling, no proxy, and the connection is made by `connect` above.
        createConnection: ((_options: unknown, callback: (error: Error | null, socket?: Socket) => void) => {
          connect(hostname, request, deadline, callback);
          return undefined;
        }) as never,
        signal: deadline.signal,
      });
      outgoing.once("response", resolveResponse);
      outgoing.once("error", reject);
      outgoing.end();
    });
  }

  function readBody(
    response: IncomingMessage,
    request: ImageFetchRequest,
    deadline: Deadline,
  ): Promise<Uint8Array> {
    return new Promise((resolveBody, reject) => {
      const tooLarge = fail(
        ErrorCodes.IMAGE_TOO_LARGE,
        `must point to a file no larger than ${formatBytes(request.maxBytes)}`,
      );
      const notImage = fail(ErrorCodes.INVALID_IMAGE, `must point to ${acceptedFormats("image")}`);
      const encoding = String(response.headers["content-encoding"] ?? "identity")
        .trim()
        .toLowerCase();
      let decoder: Transform | undefined;
      if (encoding === "gzip" || encoding === "x-gzip") decoder = createGunzip();
      else if (encoding === "deflate") decoder = createInflate();
      else if (encoding === "br") decoder = createBrotliDecompress();
      else if (encoding !== "identity" && encoding !== "") {
        response.destroy();
        reject(
          fail(
            ErrorCodes.SOURCE_ERROR,
            "could not be fetched (the source used an unsupported content encoding)",
          ),
        );
        return;
      }
      const declared = Number(response.headers["content-length"]);
      if (decoder === undefined && Number.isFinite(declared) && declared > request.maxBytes) {
        response.destroy();
        reject(tooLarge);
        return;
      }
      const chunks: Buffer[] = [];
      let total = 0;
      let sniffed = false;
      let settled = false;
      const stop = (error: Error | null) => {
        if (settled) return;
        settled = true;
        deadline.signal.removeEventListener("abort", onAbort);
        if (error !== null) {
          decoder?.destroy();
          response.destroy();
          reject(error);
          return;
        }
        resolveBody(new Uint8Array(Buffer.concat(chunks, total)));
      };
      const onAbort = () => stop(deadline.error);
      deadline.signal.addEventListener("abort", onAbort, { once: true });
      const sniff = () => {
        sniffed = true;
        if (sniffImageFormat(Buffer.concat(chunks, total)) === null) stop(notImage);
      };
      const source: Readable = decoder ?? response;
      source.on("data", (chunk: Buffer) => {
        if (settled) return;
        total += chunk.byteLength;
        if (total > request.maxBytes) {
          stop(tooLarge);
          return;
        }
        chunks.push(chunk);
        if (!sniffed && total >= 12) sniff();
      });
      source.once("end", () => {
        if (!sniffed) sniff();
        stop(null);
      });
      source.once("error", (error) => stop(translate(error)));
      response.once("error", (error) => stop(translate(error)));
      response.once("aborted", () =>
        stop(
          fail(
            ErrorCodes.SOURCE_ERROR,
            "could not be fetched (the connection closed before the body was complete)",
          ),
        ),
      );
      if (decoder !== undefined) response.pipe(decoder);
    });
  }

  return {
    name: "node",
    async fetch(request): Promise<FetchedImage> {
      const deadline = startDeadline(request.timeoutMs);
      try {
        let url = request.url;
        for (let hop = 0; ; hop++) {
          const response = await requestOnce(url, request, deadline);
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
    },
  };
}
