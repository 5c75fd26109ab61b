export {
  type BlobStorePublisherOptions,
  createBlobStorePublisher,
} from "./blob-store-publisher.js";
export {
  type CachingBlobStoreOptions,
  createCachingBlobStore,
} from "./caching-blob-store.js";
export {
  type ErrorCode,
  ErrorCodes,
  ImagePipelineError,
  type ImagePipelineErrorOptions,
  isImagePipelineError,
  type ValidationIssue,
} from "./errors.js";
export {
  generateApiKey,
  generateKeyId,
  hashApiKey,
} from "./ids.js";
export {
  FORMAT_TABLE,
  type FormatInfo,
  IMAGE_FORMATS,
  type Image,
  type ImageFacts,
  type ImageFormat,
  type ImageRecord,
  type KeyKind,
  sniffImageFormat,
} from "./image.js";
export {
  type CreatedKey,
  createApiKey,
} from "./keys.js";
export {
  DEFAULT_LIMITS,
  type Limits,
  type LimitsOptions,
} from "./limits.js";
export { createMemoryAccountStore } from "./memory/memory-account-store.js";
export { createMemoryBlobStore } from "./memory/memory-blob-store.js";
export { createMemoryImageRepository } from "./memory/memory-image-repository.js";
export { createMemoryKeyStore } from "./memory/memory-key-store.js";
export { createMemoryLockService } from "./memory/memory-lock-service.js";
export { createMemoryQuotaStore } from "./memory/memory-quota-store.js";
export { createMemoryRateLimiter } from "./memory/memory-rate-limiter.js";
export type { Operations } from "./operation-types.js";
export type { Caller } from "./operations/context.js";
export { createBlobVariantCache, type DeliveryOptions } from "./operations/deliver-variant.js";
export { type ProcessImageOptions, processImage } from "./operations/process-image.js";
export {
  OPERATIONS_TABLE,
  type OperationId,
  type OperationInput,
} from "./operations/table.js";
export {
  type AccountUsage,
  createImagePipeline,
  type ImagePipeline,
  type ImagePipelineDeps,
  type ImagePipelineOptions,
} from "./pipeline.js";
export { type PolicyOptions, RateLimitedError } from "./policies/limits-policy.js";
export type { MemoryBudgetOptions } from "./policies/memory-budget.js";
export type { ModelCircuitOptions } from "./policies/model-circuit.js";
export type { TestWatermark } from "./policies/test-watermark.js";
export type { UrlImportOptions } from "./policies/url-import-policy.js";
export type { WorkGateStats, WorkQueueOptions } from "./policies/work-gate.js";
export type {
  AccountRecord,
  AccountStore,
} from "./ports/account-store.js";
export type {
  BackgroundRemovalOptions,
  BackgroundRemovalRequest,
  BackgroundRemover,
} from "./ports/background-remover.js";
export type {
  BlobEntry,
  BlobInfo,
  BlobMetadata,
  BlobStore,
} from "./ports/blob-store.js";
export type {
  Classification,
  Classifier,
  ScoredLabel,
} from "./ports/classifier.js";
export {
  type Clock,
  systemClock,
} from "./ports/clock.js";
export type { IdGenerator } from "./ports/id-generator.js";
export type {
  CodecCapabilities,
  DecodeLimits,
  EncodedImage,
  ImageCodec,
  ImageHeader,
  ImageSample,
  SmartCropStrategy,
  TransformRequest,
} from "./ports/image-codec.js";
export type {
  FetchedImage,
  ImageFetcher,
  ImageFetchRequest,
} from "./ports/image-fetcher.js";
export type {
  ImageGenerationRequest,
  ImageGenerator,
} from "./ports/image-generator.js";
export type {
  ImagePublisher,
  PublishRequest,
} from "./ports/image-publisher.js";
export type {
  ExpiredImagesQuery,
  ImageOwner,
  ImagePage,
  ImageRecordPatch,
  ImageRepository,
  ListImagesQuery,
} from "./ports/image-repository.js";
export type {
  ApiKeyRecord,
  ApiKeyRecordPatch,
  KeyStore,
} from "./ports/key-store.js";
export type { LockService } from "./ports/lock-service.js";
export {
  type Logger,
  silentLogger,
} from "./ports/logger.js";
export type { MemoryReleaser } from "./ports/memory-releaser.js";
export type { ModelPorts } from "./ports/models.js";
export type { OriginAnswer, OriginSource } from "./ports/origin-source.js";
export type { PlaceholderEncoder, PlaceholderPixels } from "./ports/placeholder-encoder.js";
export type {
  QuotaReservation,
  QuotaReserveRequest,
  QuotaStore,
} from "./ports/quota-store.js";
export type {
  RateLimitDecision,
  RateLimiter,
  RateLimitRequest,
} from "./ports/rate-limiter.js";
export type {
  TextExtractor,
  TextFormat,
} from "./ports/text-extractor.js";
export type { CachedVariant, VariantCache, VariantSigner } from "./ports/variant-cache.js";
export type {
  ModelCallOptions,
  ModelImage,
  ModelProvider,
  VisionModel,
} from "./ports/vision-model.js";
export { BLACK } from "./transforms/color.js";
