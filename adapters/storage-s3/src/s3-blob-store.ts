import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import type { BlobInfo, BlobMetadata, BlobStore } from "@pixport/core";
import { assertBlobKey, parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import { createS3Caller, s3ClientSchema, s3PrefixSchema, s3RetryOptionsShape } from "./errors.js";

/** Options of {@link createS3BlobStore} (checked; unknown keys are refused). */
export const s3BlobStoreOptionsSchema = z
  .object({
    /**
     * A constructed S3Client; the adapter never creates or destroys it. For S3-compatible servers
     * that do not speak the SDK's default checksums (s3rver, some MinIO versions) construct it with
     * `requestChecksumCalculation: "WHEN_REQUIRED"` and `responseChecksumValidation: "WHEN_REQUIRED"`.
     */
    client: s3ClientSchema,
    /** Bucket holding the blobs. */
    bucket: z.string().min(1),
    /** Prefix of every object key (empty, or ending with `/`). @default "" */
    prefix: s3PrefixSchema,
    ...s3RetryOptionsShape,
  })
  .strict();

/** Options of {@link createS3BlobStore}; see {@link s3BlobStoreOptionsSchema}. */
export type S3BlobStoreOptions = z.input<typeof s3BlobStoreOptionsSchema>;

/**
 * A BlobStore on S3: blob `key` is object `{prefix}{key}` in `bucket`. A PUT is atomic in S3 (a
 * reader sees the old or the new object, never part of one), so `put` needs no temp key. Content
 * type and `Cache-Control` are stored as object headers. Missing objects read as `null`; throttling,
 * 5xx and connection failures are retried a bounded number of times, then throw
 * `STORAGE_UNAVAILABLE` with `retryAfterSeconds`.
 *
 * @example
 * ```ts
 * const client = new S3Client({ region: "eu-west-1" });
 * const blobStore = createS3BlobStore({ client, bucket: "pixport-private", prefix: "prod/" });
 * ```
 */
export function createS3BlobStore(input: S3BlobStoreOptions): BlobStore {
  const options = parseOptions(s3BlobStoreOptionsSchema, input, "createS3BlobStore");
  const { client, bucket, prefix } = options;
  const store: S3Bucket = { client, bucket, prefix, call: createS3Caller(options) };
  return {
    put: (key, data, metadata) => putObject(store, key, data, metadata),
    get: (key) => getObject(store, key),
    stat: (key) => statObject(store, key),
    delete: (key) => deleteObject(store, key),
    list: (keyPrefix) => listObjects(store, keyPrefix),
  };
}

/** The bucket, key prefix and retrying caller of one blob store. */
interface S3Bucket {
  readonly client: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  readonly call: ReturnType<typeof createS3Caller>;
}

function objectKey(store: S3Bucket, key: string): string {
  assertBlobKey(key);
  return `${store.prefix}${key}`;
}

async function putObject(store: S3Bucket, key: string, data: Uint8Array, metadata: BlobMetadata) {
  const Key = objectKey(store, key);
  await store.call("put", () =>
    store.client.send(
      new PutObjectCommand({
        Bucket: store.bucket,
        Key,
        Body: data,
        ContentLength: data.byteLength,
        ContentType: metadata.contentType,
        ...(metadata.cacheControl === undefined ? {} : { CacheControl: metadata.cacheControl }),
      }),
    ),
  );
}

async function getObject(store: S3Bucket, key: string) {
  const Key = objectKey(store, key);
  return store.call<Uint8Array | null>(
    "get",
    async () => {
      const response = await store.client.send(new GetObjectCommand({ Bucket: store.bucket, Key }));
      if (response.Body === undefined) return new Uint8Array(0);
      return await response.Body.transformToByteArray();
    },
    () => null,
  );
}

async function statObject(store: S3Bucket, key: string) {
  const Key = objectKey(store, key);
  return store.call<BlobInfo | null>(
    "stat",
    async () => {
      const head = await store.client.send(new HeadObjectCommand({ Bucket: store.bucket, Key }));
      return {
        size: head.ContentLength ?? 0,
        contentType: head.ContentType ?? "application/octet-stream",
        ...(head.CacheControl === undefined ? {} : { cacheControl: head.CacheControl }),
      };
    },
    () => null,
  );
}

async function deleteObject(store: S3Bucket, key: string) {
  const Key = objectKey(store, key);
  // S3's DELETE succeeds on a missing key; a 404 from a compatible server counts as done too.
  await store.call(
    "delete",
    async () => {
      await store.client.send(new DeleteObjectCommand({ Bucket: store.bucket, Key }));
    },
    () => undefined,
  );
}

async function* listObjects(store: S3Bucket, keyPrefix: string) {
  const { client, bucket, prefix } = store;
  let token: string | undefined;
  do {
    const page = await store.call(
      "list",
      () =>
        client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: `${prefix}${keyPrefix}`,
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
        ),
      () => null,
    );
    if (page === null) return;
    for (const object of page.Contents ?? []) {
      if (object.Key === undefined) continue;
      yield { key: object.Key.slice(prefix.length), modifiedAt: object.LastModified ?? new Date(0) };
    }
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}
