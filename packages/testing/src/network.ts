import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server, type ServerOptions } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { constants, tmpdir } from "node:os";
import path from "node:path";

/** A certificate authority generated for one test run, and a server certificate it signed. */
export interface TestCertificates {
  /** The CA certificate (PEM) to trust. */
  ca: string;
  /** Server key and certificate (PEM) valid for the requested host names. */
  key: string;
  cert: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync("openssl", args, { cwd, stdio: "pipe" });
  } catch (error) {
    throw new Error(
      `The test certificates need the openssl CLI (apt-get install openssl): ${(error as Error).message}`,
    );
  }
}

/** An elliptic-curve (P-256) key for each request, unencrypted. */
const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

const readPem = (dir: string, name: string) => readFileSync(path.join(dir, name), "utf8");

/**
 * Generates, offline and at test time, a throw-away CA and a server certificate for `hosts`
 * (with the `openssl` CLI). Pass `ca: false` to get a self-signed server certificate instead
 * (one that no client trusts).
 */
export function createTestCertificates(
  hosts: readonly string[],
  options: { ca?: boolean } = {},
): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), "pixport-tls-"));
  try {
    const san = hosts.map((host) => `DNS:${host}`).join(",");
    writeFileSync(
      path.join(dir, "leaf.cnf"),
      `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
    );
    if (options.ca === false) {
      writeSelfSigned(dir, san);
      const cert = readPem(dir, "leaf.pem");
      return { ca: cert, key: readPem(dir, "leaf.key"), cert };
    }
    writeAuthority(dir);
    writeSignedLeaf(dir);
    return { ca: readPem(dir, "ca.pem"), key: readPem(dir, "leaf.key"), cert: readPem(dir, "leaf.pem") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `leaf.key` and a self-signed `leaf.pem` for the names of `san`. */
function writeSelfSigned(dir: string, san: string): void {
  openssl(
    [
      "req",
      "-x509",
      ...EC_KEY,
      "-keyout",
      "leaf.key",
      "-out",
      "leaf.pem",
      "-days",
      "2",
      "-subj",
      "/CN=self-signed",
      "-addext",
      `subjectAltName=${san}`,
    ],
    dir,
  );
}

/** `ca.key` and `ca.pem`: a CA that may sign certificates and nothing else. */
function writeAuthority(dir: string): void {
  openssl(
    [
      "req",
      "-x509",
      ...EC_KEY,
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "2",
      "-subj",
      "/CN=pixport test CA",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    dir,
  );
}

/** `leaf.key` and `leaf.pem`, signed by the CA with the extensions of `leaf.cnf`. */
function writeSignedLeaf(dir: string): void {
  openssl(
    ["req", ...EC_KEY, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=pixport test server"],
    dir,
  );
  openssl(
    [
      "x509",
      "-req",
      "-in",
      "leaf.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "leaf.pem",
      "-days",
      "2",
      "-extfile",
      "leaf.cnf",
    ],
    dir,
  );
}

/** A real HTTPS server on a random loopback port that counts its TCP connections. */
export interface TestHttpsServer {
  server: Server;
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  close(): Promise<void>;
}

/** Starts an HTTPS server on `127.0.0.1` (random port) with the given key/cert and handler. */
export async function startTestHttpsServer(
  tls: Pick<ServerOptions, "key" | "cert">,
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<TestHttpsServer> {
  const server = createServer({ key: tls.key, cert: tls.cert }, handler);
  const sockets = new Set<Socket>();
  const result: TestHttpsServer = {
    server,
    port: 0,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  server.on("connection", (socket: Socket) => {
    result.connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  result.port = (server.address() as AddressInfo).port;
  return result;
}

/** One outgoing TCP connection attempt seen by the spy. */
export interface SpiedConnection {
  address: string;
  port: number;
}

/** What {@link installConnectionSpy} returns. */
export interface ConnectionSpy {
  /** Every outgoing TCP connection attempted by this process since install (or the last reset). */
  readonly connections: SpiedConnection[];
  reset(): void;
  restore(): void;
}

const LOOPBACK = /^(?:127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)$/;

/**
 * Spies on every outgoing TCP connection of this process at the lowest JavaScript level (the TCP
 * handle's `connect`/`connect6`, below `net`, `tls`, `https` and any custom look-up), so a test can
 * assert that a code path opened no connection at all. As a safety net it also refuses (with
 * ECONNREFUSED, before any packet is sent) every destination that is not 127.0.0.1 or ::1: tests
 * never reach the network, even when the code under test is broken.
 */
export function installConnectionSpy(): ConnectionSpy {
  // `process.binding` is deprecated but is the only hook below `net` that sees the final address.
  const binding = (process as unknown as { binding(name: string): Record<string, unknown> }).binding(
    "tcp_wrap",
  );
  const prototype = (binding.TCP as { prototype: Record<string, (...args: unknown[]) => number> }).prototype;
  const original4 = prototype.connect as (...args: unknown[]) => number;
  const original6 = prototype.connect6 as (...args: unknown[]) => number;
  const connections: SpiedConnection[] = [];
  const refused = -(constants.errno.ECONNREFUSED as number);
  const wrap = (original: (...args: unknown[]) => number) =>
    function (this: unknown, ...args: unknown[]): number {
      const address = String(args[1]);
      connections.push({ address, port: Number(args[2]) });
      if (!LOOPBACK.test(address)) return refused;
      return original.apply(this, args);
    };
  prototype.connect = wrap(original4);
  prototype.connect6 = wrap(original6);
  return {
    connections,
    reset: () => {
      connections.length = 0;
    },
    restore: () => {
      prototype.connect = original4;
      prototype.connect6 = original6;
    },
  };
}
