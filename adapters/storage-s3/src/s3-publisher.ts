import { CopyObjectCommand, DeleteObjectCommand } from "@aws-sdk/client-s3";
import { ErrorCodes, ImagePipelineError, type ImagePublisher, isImagePipelineError } from "@pixport/core";
import { assertBlobKey, MIME_TYPES, parseOptions, publicKeyFor } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { createS3Caller, s3ClientSchema, s3PrefixSchema, s3RetryOptionsShape } from "./errors.js";

/**
 * Clears URLs from the CDN in front of the public bucket (CloudFront invalidation, Fastly or
 * Cloudflare purge, ...). Called after the public object is deleted, so the next request misses
 * the cache and gets the bucket's 404. Must be idempotent; a rejection fails the unpublish, which
 * the caller may retry (deleting the object again is harmless).
 */
export interface CdnPurger {
  purge(urls: string[]): Promise<void>;
}

/** A bucket and key prefix (empty, or ending with `/`). */
export const s3LocationSchema = z.object({ bucket: z.string().min(1), prefix: s3PrefixSchema }).strict();

/** A bucket and key prefix (empty, or ending with `/`). */
export type S3Location = z.input<typeof s3LocationSchema>;

/** Options of {@link createS3Publisher} (checked; unknown keys are refused). */
export const s3PublisherOptionsSchema = z
  .object({
    /** A constructed S3Client that can read `source` and write `target`. */
    client: s3ClientSchema,
    /** Where the private bytes are: the bucket and prefix of the deployment's S3 BlobStore. */
    source: s3LocationSchema,
    /** Where public copies go (`{prefix}images/{id}.{ext}`); the CDN or bucket website serves it. */
    target: s3LocationSchema,
    /** Absolute URL that maps to `target` (CDN), without a trailing slash. */
    publicBaseUrl: z.url({ protocol: /^https?$/ }),
    /** `Cache-Control` of public copies. @default "public, max-age=31536000, immutable" */
    cacheControl: z.string().min(1).default("public, max-age=31536000, immutable"),
    /** Optional CDN purge, called with the public URL on unpublish. */
    purge: z
      .custom<CdnPurger>((value) => typeof (value as Partial<CdnPurger> | null)?.purge === "function", {
        message: "must be a CdnPurger (an object with purge(urls))",
      })
      .optional(),
    ...s3RetryOptionsShape,
  })
  .strict();

/** Options of {@link createS3Publisher}; see {@link s3PublisherOptionsSchema}. */
export type S3PublisherOptions = z.input<typeof s3PublisherOptionsSchema>;

/**
 * An ImagePublisher that copies the private object to the public bucket/prefix with a server-side
 * CopyObject (no bytes pass through this process), setting the content type and `Cache-Control`.
 * Publishing again overwrites with identical bytes and returns the same URL; unpublish deletes the
 * public object (idempotent) and then calls the purge hook.
 *
 * @example
 * ```ts
 * const publisher = createS3Publisher({
 *   client,
 *   source: { bucket: "pixport-private", prefix: "prod/" },
 *   target: { bucket: "pixport-public" },
 *   publicBaseUrl: "https://images.example.com",
 * });
 * ```
 */
export function createS3Publisher(input: S3PublisherOptions): ImagePublisher {
  const options = parseOptions(s3PublisherOptionsSchema, input, "createS3Publisher");
  const { client, cacheControl } = options;
  const sourcePrefix = options.source.prefix;
  const targetPrefix = options.target.prefix;
  const base = options.publicBaseUrl.replace(/\/+$/, "");
  const call = createS3Caller(options);
  return {
    urlFor: ({ id, format }) => `${base}/${publicKeyFor(id, format)}`,
    async publish({ id, format, blobKey }) {
      assertBlobKey(blobKey);
      const key = publicKeyFor(id, format);
      const sourceKey = `${sourcePrefix}${blobKey}`;
      const missing = Symbol("missing");
      const result = await call<typeof missing | undefined>(
        "publish",
        async () => {
          await client.send(
            new CopyObjectCommand({
              Bucket: options.target.bucket,
              Key: `${targetPrefix}${key}`,
              CopySource: `${options.source.bucket}/${sourceKey.split("/").map(encodeURIComponent).join("/")}`,
              MetadataDirective: "REPLACE",
              ContentType: MIME_TYPES[format],
              CacheControl: cacheControl,
            }),
          );
          return undefined;
        },
        () => missing,
      );
      if (result === missing) {
        throw new ImagePipelineError(ErrorCodes.INTERNAL, `The stored bytes of image ${id} are missing.`);
      }
      return `${base}/${key}`;
    },
    async unpublish({ id, format }) {
      const key = publicKeyFor(id, format);
      await call(
        "unpublish",
        async () => {
          await client.send(
            new DeleteObjectCommand({ Bucket: options.target.bucket, Key: `${targetPrefix}${key}` }),
          );
        },
        () => undefined,
      );
      if (options.purge !== undefined) {
        try {
          await options.purge.purge([`${base}/${key}`]);
        } catch (error) {
          if (isImagePipelineError(error)) throw error;
          throw new ImagePipelineError(
            ErrorCodes.STORAGE_UNAVAILABLE,
            `The CDN purge of ${base}/${key} failed; the public object is deleted, retry to purge again.`,
            { cause: error, retryAfterSeconds: 5 },
          );
        }
      }
    },
  };
}
