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
