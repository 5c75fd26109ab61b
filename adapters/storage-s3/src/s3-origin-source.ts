import { GetObjectCommand, type GetObjectCommandOutput } from "@aws-sdk/client-s3";
import {
  ErrorCodes,
  isImagePipelineError,
  type OriginAnswer,
  type OriginSource,
  sniffImageFormat,
} from "@pixport/core";
import {
  cacheControlMaxAge,
  originError,
  originNotImage,
  originTooLarge,
  parseOptions,
} from "@pixport/core/adapter-kit";
import { z } from "zod";
import { createS3Caller, s3ClientSchema, s3PrefixSchema, s3RetryOptionsShape } from "./errors.js";

/** Options of {@link createS3OriginSource} (checked; unknown keys are refused). */
export const s3OriginSourceOptionsSchema = z.strictObject({
  /**
   * A constructed S3Client (credentials from the SDK's usual chain); the adapter never creates or
   * destroys it. s3rver and some MinIO versions need `requestChecksumCalculation` and
   * `responseChecksumValidation` set to `"WHEN_REQUIRED"`.
   */
  client: s3ClientSchema,
  /** Bucket holding the origin's images. */
  bucket: z.string().min(1),
  /** Prefix the URL's path is appended to (empty, or ending with `/`). @default "" */
  prefix: s3PrefixSchema,
  ...s3RetryOptionsShape,
});
export type S3OriginSourceOptions = z.input<typeof s3OriginSourceOptionsSchema>;

const status = (error: unknown) =>
  (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;

/**
 * An origin source on an S3 bucket: `{path}` names object `{prefix}{path}`. A revalidation sends
 * the held `ETag` as `If-None-Match` (S3 answers 304 without the body); the object's own
 * `Cache-Control` sets its freshness. The body is streamed with the byte limit counted as it
 * arrives, and its first bytes must be an image's. Throttling and 5xx are retried a bounded number
 * of times, then the origin has failed (502).
 *
 * @example
 * ```ts
 * const origins = { shop: createS3OriginSource({ client: new S3Client({}), bucket: "shop-media", prefix: "products/" }) };
 * ```
 */
export function createS3OriginSource(input: S3OriginSourceOptions): OriginSource {
  const options = parseOptions(s3OriginSourceOptionsSchema, input, "createS3OriginSource");
  const { client, bucket, prefix } = options;
  const call = createS3Caller(options);
  return {
    kind: "s3",
    async get(request) {
      const Key = `${prefix}${request.segments.join("/")}`;
      const etag = request.validators?.etag;
      try {
        return await call<OriginAnswer>(
          "get",
          async () => {
            let response: GetObjectCommandOutput;
            try {
              response = await client.send(
                new GetObjectCommand({
                  Bucket: bucket,
                  Key,
                  ...(etag === undefined ? {} : { IfNoneMatch: etag }),
                }),
                { abortSignal: request.signal },
              );
            } catch (error) {
              if (status(error) === 304 && etag !== undefined) {
                return { status: "not-modified" as const, validators: request.validators ?? {} };
              }
              throw error;
            }
            const validators = {
              etag: response.ETag,
              lastModified: response.LastModified?.toUTCString(),
            };
            const maxAgeSeconds = cacheControlMaxAge(response.CacheControl);
            if ((response.ContentLength ?? 0) > request.maxBytes) {
              (response.Body as { destroy?: () => void } | undefined)?.destroy?.();
              throw originTooLarge(request.maxBytes);
            }
            const data = await readLimited(response.Body, request.maxBytes);
            if (sniffImageFormat(data) === null) throw originNotImage();
            return { status: "found" as const, data, validators, maxAgeSeconds };
          },
          () => ({ status: "not-found" as const }),
        );
      } catch (error) {
        if (isImagePipelineError(error) && error.code !== ErrorCodes.STORAGE_UNAVAILABLE) throw error;
        throw originError("The origin's bucket could not be read.", error);
      }
    },
  };
}

/** Reads a response body, refusing it once it passes `maxBytes` (the stream is stopped there). */
async function readLimited(body: unknown, maxBytes: number): Promise<Uint8Array> {
  if (body === undefined || body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const stream = body as AsyncIterable<Uint8Array> & { destroy?: () => void };
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      stream.destroy?.();
      throw originTooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  const data = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    data.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return data;
}
