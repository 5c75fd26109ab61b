/** What {@link ImageFetcher.fetch} is asked to do. */
export interface ImageFetchRequest {
  /** An absolute `https` URL the origin policy has accepted (share links already rewritten). */
  url: string;
  /**
   * Decides a redirect hop: `location` is the raw `Location` header, `from` the URL that answered.
   * Returns the next URL or a refusal whose `message` is a client-facing sentence. The fetcher must
   * call it for every hop before any connection to the new host.
   */
  checkRedirect(
    location: string,
    from: string,
  ): { ok: true; url: string } | { ok: false; code: string; message: string };
  /** Redirects followed at most; one more is a `SOURCE_ERROR`. */
  maxRedirects: number;
  /** Largest accepted body, counted on decoded bytes while streaming. */
  maxBytes: number;
  /** Deadline to open the connection (TCP and TLS) of one hop, ms. */
  connectTimeoutMs: number;
  /** Deadline for the whole fetch (all hops, headers and body), ms. */
  timeoutMs: number;
}

/** The fetched body. */
export interface FetchedImage {
  data: Uint8Array;
  /** The URL that finally answered (after redirects). */
  url: string;
}

/**
 * Fetches the bytes of an image URL for `createImageFromUrl`. The core's origin policy decides
 * which URLs and redirect hops are allowed; the fetcher owns everything below: which network
 * addresses may be connected to, deadlines, size caps and content checks.
 *
 * Semantics every adapter must keep:
 * - Only `https`. No inbound request headers are forwarded (no `Authorization`, `Cookie`, API
 *   key); no cookies are kept between hops.
 * - The address actually connected to (every hop, IP literals included) must be public: loopback,
 *   private, link-local, CGNAT, multicast, reserved and documentation ranges and their IPv6
 *   embeddings are refused before any connection, so DNS rebinding cannot redirect a checked name.
 * - Redirects are followed manually, at most `maxRedirects`, each one passed to `checkRedirect`.
 * - `maxBytes` is enforced while streaming on decoded bytes; `Content-Length` is never trusted.
 * - The body must start like an image of a format pixport reads (`IMAGE_FORMATS`), whatever the
 *   declared content type says.
 * - Failures throw `ImagePipelineError` with `URL_NOT_ALLOWED`, `SOURCE_UNREACHABLE`,
 *   `SOURCE_TIMEOUT`, `SOURCE_NOT_ACCESSIBLE` (4xx), `SOURCE_ERROR` (5xx, protocol, TLS, too many
 *   redirects), `IMAGE_TOO_LARGE` or `INVALID_IMAGE`. Their `message` is shown to the client after
 *   the field name (`url could not be reached ...`), so it never contains internal details;
 *   `cause` keeps them for the log. The operation turns any other error into `SOURCE_ERROR`.
 * - The returned promise always settles within `timeoutMs` (plus scheduling slack).
 */
export interface ImageFetcher {
  readonly name: string;
  fetch(request: ImageFetchRequest): Promise<FetchedImage>;
}
