import { isIP, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { ErrorCodes, type ImageFetchRequest } from "@pixport/core";
import { type Deadline, fail, seconds } from "./fetch-errors.js";

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

/** How connections are made: the resolver, the address policy and the TLS settings. */
export interface ConnectSettings {
  resolve: HostResolver;
  addressPolicy: AddressPolicy;
  ca: string | Buffer | (string | Buffer)[] | undefined;
  port: number;
}

function blocked(addressPolicy: AddressPolicy, address: string, hostname: string, cause?: unknown) {
  return fail(
    ErrorCodes.SOURCE_UNREACHABLE,
    "could not be reached (its host resolves to a non-public address)",
    cause ?? new Error(`${hostname} -> ${address}: ${addressPolicy(address, { hostname })}`),
  );
}

/** Resolves and validates, then connects to the validated address; calls back with the TLS socket. */
export function connect(
  settings: ConnectSettings,
  hostname: string,
  request: ImageFetchRequest,
  deadline: Deadline,
  callback: (error: Error | null, socket?: Socket) => void,
): void {
  const { resolve, addressPolicy, port, ca } = settings;
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
      if (addressPolicy(answer.address, { hostname }) !== null)
        throw blocked(addressPolicy, answer.address, hostname);
    }
    const target = (answers[0] as ResolvedAddress).address;
    const tlsSocket = tlsConnect({
      host: target,
      port,
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
      if (addressPolicy(peer, { hostname }) !== null)
        tlsSocket.destroy(blocked(addressPolicy, peer, hostname));
    });
    tlsSocket.once("secureConnect", () => clearTimeout(timer));
    tlsSocket.once("close", () => clearTimeout(timer));
    finish(null, tlsSocket);
  })().catch((error: unknown) => {
    clearTimeout(timer);
    finish(error instanceof Error ? error : new Error(String(error)));
  });
}
