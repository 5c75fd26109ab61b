/** Validators of an original: sent back to its origin to ask whether the copy held is current. */
export interface OriginValidators {
  /** The origin's `ETag` (strong or weak, as sent). */
  etag?: string | undefined;
  /** The origin's `Last-Modified` (an HTTP date). */
  lastModified?: string | undefined;
}

/** What {@link OriginSource.get} is asked for. */
export interface OriginGetRequest {
  /**
   * The path under the origin as decoded segments, each already checked by the core: never empty,
   * `.` or `..`, and without `/`, `\`, NUL or other control characters. An adapter joins them in
   * its own way (URL-encoded for HTTP, `/` for S3 keys, path segments for a directory) and must
   * still keep the result inside its root.
   */
  segments: readonly string[];
  /** Validators of the copy held: the source may answer `not-modified` when it is still current. */
  validators?: OriginValidators | undefined;
  /** Largest accepted body, bytes; a larger one is `IMAGE_TOO_LARGE` without reading it all. */
  maxBytes: number;
  /** Aborted when the request that needs the original goes away. */
  signal?: AbortSignal | undefined;
}

/** What the origin has at a path. */
export type OriginAnswer =
  | {
      status: "found";
      data: Uint8Array;
      validators: OriginValidators;
      /** How long the origin says the bytes stay fresh (`Cache-Control: max-age`), seconds. */
      maxAgeSeconds?: number | undefined;
    }
  | {
      /** The copy whose validators were sent is still current; no body was transferred. */
      status: "not-modified";
      validators: OriginValidators;
      maxAgeSeconds?: number | undefined;
    }
  | { status: "not-found" };

/**
 * Reads originals from where they already live (an HTTP server, an S3 bucket, a directory) for
 * variants of origin images (`GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`).
 *
 * Semantics every adapter must keep:
 * - The answer stays inside the configured root: no path, redirect or symbolic link leads
 *   outside it (a redirect or link that would is refused as `ORIGIN_ERROR`, never followed).
 * - A missing object is `{ status: "not-found" }`, never an error.
 * - `maxBytes` is enforced while reading; a declared size is never trusted alone.
 * - The bytes are checked to start like an image of a format pixport reads (the core sniffs them
 *   again and reads their header before any decode).
 * - `not-modified` only when `validators` were given and the origin confirms them; an adapter
 *   that cannot compare may always answer `found`.
 * - Failures throw `ImagePipelineError` with `ORIGIN_ERROR` (the origin failed, refused, or sent
 *   something else than an image), `ORIGIN_TIMEOUT` (no complete answer in time),
 *   `IMAGE_TOO_LARGE` or `INVALID_IMAGE`. Messages are shown to clients, so they never contain
 *   internal details (hosts, keys, directories); `cause` keeps them for the log.
 */
export interface OriginSource {
  /** The kind of origin, for logs: `http`, `s3`, `fs`. */
  readonly kind: string;
  get(request: OriginGetRequest): Promise<OriginAnswer>;
}
