export type { S3RetryOptions } from "./errors.js";
export { createS3BlobStore, type S3BlobStoreOptions, s3BlobStoreOptionsSchema } from "./s3-blob-store.js";
export {
  createS3OriginSource,
  type S3OriginSourceOptions,
  s3OriginSourceOptionsSchema,
} from "./s3-origin-source.js";
export {
  type CdnPurger,
  createS3Publisher,
  type S3Location,
  type S3PublisherOptions,
  s3LocationSchema,
  s3PublisherOptionsSchema,
} from "./s3-publisher.js";
