import { ErrorCodes, ImagePipelineError } from "./errors.js";
import { blobKeyFor, type ImageFormat, MIME_TYPES } from "./image.js";
import type { BlobStore } from "./ports/blob-store.js";
import type { ImagePublisher } from "./ports/image-publisher.js";

/** Options of {@link createBlobStorePublisher}. */
export interface BlobStorePublisherOptions {
  /** Where the private bytes are. */
  source: BlobStore;
  /** Where public copies go; whatever serves them must map `images/{id}.{ext}` to `{publicBaseUrl}/images/{id}.{ext}`. */
  target: BlobStore;
  /** Absolute base URL of the public store, without a trailing slash, e.g. `https://cdn.example.com`. */
  publicBaseUrl: string;
  /**
   * `Cache-Control` stored with public copies. Published bytes never change under a URL (every
   * transform makes a new id), so they may be cached for a long time.
   * @default "public, max-age=31536000, immutable"
   */
  cacheControl?: string;
}

/** Key of an image's public copy in the public store: the same layout as its private bytes. */
export function publicKeyFor(id: string, format: ImageFormat): string {
  return blobKeyFor(id, format);
}

/**
 * An ImagePublisher that copies bytes from a private BlobStore to a public one (a directory served
 * without a key, a public bucket, ...). Idempotent both ways.
 *
 * @example
 * ```ts
 * const publisher = createBlobStorePublisher({
 *   source: blobStore,
 *   target: publicStore,
 *   publicBaseUrl: "https://images.example.com",
 * });
 * ```
 */
export function createBlobStorePublisher(options: BlobStorePublisherOptions): ImagePublisher {
  const base = options.publicBaseUrl.replace(/\/+$/, "");
  const cacheControl = options.cacheControl ?? "public, max-age=31536000, immutable";
  return {
    urlFor: ({ id, format }) => `${base}/${publicKeyFor(id, format)}`,
    async publish({ id, format, blobKey }) {
      const key = publicKeyFor(id, format);
      if ((await options.target.stat(key)) === null) {
        const data = await options.source.get(blobKey);
        if (data === null) {
          throw new ImagePipelineError(ErrorCodes.INTERNAL, `The stored bytes of image ${id} are missing.`);
        }
        await options.target.put(key, data, { contentType: MIME_TYPES[format], cacheControl });
      }
      return `${base}/${key}`;
    },
    async unpublish({ id, format }) {
      await options.target.delete(publicKeyFor(id, format));
    },
  };
}
