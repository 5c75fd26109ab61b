import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

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

/** The errors a connection fails with, in the caller's error family. */
export interface ConnectErrors {
  /** The URL's scheme may not be used (plain `http:` when it is not allowed, or neither http nor https). */
  scheme(url: URL): Error;
  /** `address`, one of `hostname`'s or the peer connected, is refused by the policy for `reason`. */
  blocked(address: string, hostname: string, reason: string): Error;
  /** `hostname` resolved to no address at all. */
  noAddress(hostname: string): Error;
  /** The connection was not ready to carry the request within `connectTimeoutMs`. */
  timeout(): Error;
}

/** How connections are made: what the two callers (URL fetcher, http origin) set differently. */
export interface ConnectorOptions {
  resolve: HostResolver;
  addressPolicy: AddressPolicy;
  /** Whether `http:` URLs are connected to over plain TCP; without it only `https:` is. */
  allowPlainHttp: boolean;
  /** Extra trusted CA certificates (PEM) of `https:` connections. */
  ca: string | Buffer | (string | Buffer)[] | undefined;
  /** The port connected to instead of the URL's (test servers). */
  port?: number | undefined;
  /** Deadline from the request to a connection ready to carry it (name look-up, TCP, TLS). */
  connectTimeoutMs: number;
  /** Largest accepted response head, bytes. */
  maxHeaderBytes: number;
  errors: ConnectErrors;
}

/** The host of `url` without the brackets of an IPv6 literal. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1");

/** The addresses of `hostname`, every one passing the policy (one refused answer refuses the host). */
async function checkedAddresses(options: ConnectorOptions, hostname: string): Promise<string> {
  const { addressPolicy, errors } = options;
  const family = isIP(hostname);
  const answers = family !== 0 ? [{ address: hostname, family }] : await options.resolve(hostname);
  const first = answers[0];
  if (first === undefined) throw errors.noAddress(hostname);
  // No happy-eyeballs choice can pick a private answer: every one of them must pass.
  for (const answer of answers) {
    const reason = addressPolicy(answer.address, { hostname });
    if (reason !== null) throw errors.blocked(answer.address, hostname, reason);
  }
  return first.address;
}

/**
 * Opens the connection of one request to `url`: resolves the host and checks every address, then
 * connects to the checked address itself (TLS with SNI and certificate checks on the host name
 * for `https:`), so no second look-up can happen and DNS rebinding cannot change the
 * destination; the peer actually connected is checked again. Calls back with the socket, or with
 * an error of `options.errors` (a failed look-up's own error passes through). Nothing is called
 * back once `signal` has aborted (the request is gone).
 */
export function connect(
  options: ConnectorOptions,
  url: URL,
  signal: AbortSignal | undefined,
  callback: (error: Error | null, socket?: Socket) => void,
): void {
  const { addressPolicy, errors } = options;
  const hostname = hostOf(url);
  const secure = url.protocol === "https:";
  let socket: Socket | undefined;
  let done = false;
  const finish = (error: Error | null, value?: Socket) => {
    if (done) return;
    done = true;
    callback(error, value);
  };
  const timer = setTimeout(() => {
    const error = errors.timeout();
    socket?.destroy(error);
    finish(error);
  }, options.connectTimeoutMs);
  (async () => {
    if (!(secure || (options.allowPlainHttp && url.protocol === "http:"))) throw errors.scheme(url);
    const address = await checkedAddresses(options, hostname);
    if (signal?.aborted || done) {
      clearTimeout(timer);
      return;
    }
    const port = options.port ?? (url.port === "" ? (secure ? 443 : 80) : Number(url.port));
    const opened = secure
      ? tlsConnect({
          host: address,
          port,
          // SNI and the certificate check use the host name, never the address (no IP SNI).
          ...(isIP(hostname) !== 0 ? {} : { servername: hostname }),
          ca: options.ca,
          minVersion: "TLSv1.2",
          ALPNProtocols: ["http/1.1"],
        })
      : netConnect({ host: address, port });
    socket = opened;
    opened.once("connect", () => {
      // Defence in depth: the peer actually connected must pass the same policy.
      const peer = opened.remoteAddress ?? "";
      const reason = addressPolicy(peer, { hostname });
      if (reason !== null) opened.destroy(errors.blocked(peer, hostname, reason));
      else if (!secure) clearTimeout(timer);
    });
    opened.once("secureConnect", () => clearTimeout(timer));
    opened.once("close", () => clearTimeout(timer));
    finish(null, opened);
  })().catch((error: unknown) => {
    clearTimeout(timer);
    finish(error instanceof Error ? error : new Error(String(error)));
  });
}

/**
 * One GET of `url` (no redirect followed) on a connection of {@link connect}: no agent (no
 * pooling, no proxy), `Host` from the URL, then `headers`. Resolves with the response head;
 * rejects with the connection's or the request's error, or the signal's once it aborts.
 */
export function getThrough(
  options: ConnectorOptions,
  url: URL,
  headers: OutgoingHttpHeaders,
  signal: AbortSignal | undefined,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing = (url.protocol === "https:" ? httpsRequest : httpRequest)({
      host: hostOf(url),
      method: "GET",
      path: `${url.pathname}${url.search}`,
      headers: { Host: url.host, ...headers },
      maxHeaderSize: options.maxHeaderBytes,
      createConnection: ((_options: unknown, callback: (error: Error | null, socket?: Socket) => void) => {
        connect(options, url, signal, callback);
        return undefined;
      }) as never,
      ...(signal === undefined ? {} : { signal }),
    });
    outgoing.once("response", resolve);
    outgoing.once("error", reject);
    outgoing.end();
  });
}
