/**
 * A framework-neutral request. Bindings (Express, Fastify, Lambda) translate their native request
 * into this shape and never declare routes themselves.
 */
export interface HttpRequest {
  /** Upper-case method. */
  method: string;
  /** Path below the mount point, starting with `/` (e.g. `/v1/images`). No query string. */
  path: string;
  /** Query parameters (repeated names keep every value). */
  query: URLSearchParams;
  /** Header names in lower case. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The raw body: a stream of chunks (Node request), complete bytes (Lambda), or `null`. */
  body: AsyncIterable<Uint8Array> | Uint8Array | null;
  /**
   * Absolute URL of the mount point as the client sees it (e.g. `https://api.example.com/pixport`),
   * used for list links when no public base URL is configured.
   */
  baseUrl: string;
  /**
   * Aborted when the client goes away before the response is sent (set by the Express and Fastify
   * bindings). Model-backed calls, background removal and jobs still waiting for a slot of the
   * work gate stop with it, and nothing is billed. Absent: the work always runs to its end.
   */
  signal?: AbortSignal;
}

/** A framework-neutral response. JSON bodies are already encoded. */
export interface HttpResponse {
  status: number;
  /** Header names in their canonical case; values are strings. */
  headers: Record<string, string>;
  body: Uint8Array | null;
}

/** Reads a header value (first value when repeated). */
export function headerValue(request: Pick<HttpRequest, "headers">, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** The part of a Node `ServerResponse` that {@link clientGoneSignal} watches. */
export interface ClosableResponse {
  once(event: "close", listener: () => void): unknown;
  readonly writableFinished: boolean;
}

/**
 * For bindings on Node's HTTP server: a signal aborted (reason: an `Error` named `AbortError`)
 * when the response closes before it was completely written, i.e. the client went away.
 */
export function clientGoneSignal(response: ClosableResponse): AbortSignal {
  const controller = new AbortController();
  response.once("close", () => {
    if (!response.writableFinished) {
      const reason = new Error("The client closed the connection before the response was sent.");
      reason.name = "AbortError";
      controller.abort(reason);
    }
  });
  return controller.signal;
}
