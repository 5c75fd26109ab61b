import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the loopback origin served: full bodies and 304s per path. */
export interface OriginCounts {
  full: Map<string, number>;
  notModified: Map<string, number>;
}

type Route = (request: IncomingMessage, response: ServerResponse) => void;

/**
 * A loopback HTTP origin: files by decoded path (with or without ETag and Last-Modified; 304 to a
 * matching `If-None-Match`), plus routes of its own (redirects, slow and huge bodies, errors).
 */
export async function startLoopbackOrigin(routes: Record<string, Route> = {}) {
  const files = new Map<string, { data: Uint8Array; validators: boolean; modified: Date }>();
  const counts: OriginCounts = { full: new Map(), notModified: new Map() };
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const server = createServer((incoming, response) => {
    const path = decodeURIComponent(new URL(incoming.url ?? "/", "http://origin").pathname);
    const route = routes[path];
    if (route !== undefined) return route(incoming, response);
    const file = files.get(path);
    if (file === undefined) return response.writeHead(404).end();
    const etag = `"${createHash("sha256").update(file.data).digest("hex").slice(0, 20)}"`;
    if (file.validators && incoming.headers["if-none-match"] === etag) {
      bump(counts.notModified, path);
      return response.writeHead(304, { ETag: etag }).end();
    }
    bump(counts.full, path);
    response.writeHead(200, {
      "Content-Type": "image/png",
      "Content-Length": file.data.byteLength,
      ...(file.validators ? { ETag: etag, "Last-Modified": file.modified.toUTCString() } : {}),
    });
    response.end(file.data);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    put(path: string, data: Uint8Array, validators = true) {
      files.set(path, { data, validators, modified: new Date() });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A GET with the path sent exactly as written (fetch would normalise `..` and `%2e`). */
export function rawGet(base: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const outgoing = request({ hostname, port, path, method: "GET" }, (response) => {
      let body = "";
      response.setEncoding("latin1");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}
