import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCodes } from "@pixport/core";
import { errorBody } from "./error-status.js";
import type { HttpHandler } from "./handler.js";
import { clientGoneSignal } from "./types.js";

/** Options of {@link createNodeListener}. */
export interface NodeListenerOptions {
  /**
   * Absolute URL of the mount point as clients see it, for list links when no public base URL is
   * configured. @default `http://{Host header}`
   */
  baseUrl?: string;
}

/**
 * The neutral handler as a `node:http` request listener, with no framework in between: the raw
 * request body is streamed to the handler, the client's disconnect aborts the work
 * (`clientGoneSignal`), and the answer is written with one `writeHead`/`end`. An error the handler
 * did not answer itself (a bug) is a generic 500 in the contract's error shape.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * createServer(createNodeListener(createHttpHandler(pipeline))).listen(3000);
 * ```
 */
export function createNodeListener(
  handler: HttpHandler,
  options: NodeListenerOptions = {},
): (request: IncomingMessage, response: ServerResponse) => void {
  const fixedBase = options.baseUrl?.replace(/\/+$/, "");
  return (request, response) => {
    const url = request.url ?? "/";
    const queryIndex = url.indexOf("?");
    handler({
      method: request.method ?? "GET",
      path: queryIndex === -1 ? url : url.slice(0, queryIndex),
      query: new URLSearchParams(queryIndex === -1 ? "" : url.slice(queryIndex + 1)),
      headers: request.headers,
      body: request,
      baseUrl: fixedBase ?? `http://${request.headers.host ?? "localhost"}`,
      signal: clientGoneSignal(response),
    }).then(
      (result) => {
        response.writeHead(result.status, result.headers);
        response.end(
          result.body === null
            ? undefined
            : Buffer.from(result.body.buffer, result.body.byteOffset, result.body.byteLength),
        );
      },
      () => {
        if (response.headersSent) {
          response.destroy();
          return;
        }
        const body = JSON.stringify(
          errorBody({ status: 500, message: "An unexpected error occurred.", code: ErrorCodes.INTERNAL }),
        );
        response.writeHead(500, { "Content-Type": "application/json; charset=utf-8" });
        response.end(body);
      },
    );
  };
}
