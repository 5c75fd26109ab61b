export {
  type BlobStorePublisherOptions,
  createBlobStorePublisher,
} from "./blob-store-publisher.js";
export {
  type CachingBlobStoreOptions,
  createCachingBlobStore,
} from "./caching-blob-store.js";
export { defineImageCodec } from "./codec-kit.js";
export {
  type ErrorCode,
  ErrorCodes,
  ImagePipelineError,
  type ImagePipelineErrorOptions,
  isImagePipelineError,
  type ValidationIssue,
  validationError,
} from "./errors.js";
export {
  createRandomIdGenerator,
  generateApiKey,
  generateKeyId,
  hashApiKey,
} from "./ids.js";
export {
  ANIMATED_FORMATS,
  BROWSER_FORMATS,
  FILE_EXTENSIONS,
  FORMAT_TABLE,
  type FormatInfo,
  type FormatSpelling,
  formatList,
  formatSpellings,
  IMAGE_FORMATS,
  IMAGE_ID_PATTERN,
  type Image,
  type ImageFacts,
  type ImageFormat,
  type ImageRecord,
  type KeyKind,
  MIME_TYPES,
  sniffImageFormat,
} from "./image.js";
export {
  type CreatedKey,
  createApiKey,
} from "./keys.js";
export {
  DEFAULT_LIMITS,
  formatBytes,
  type Limits,
  type LimitsOptions,
  limitsSchema,
} from "./limits.js";
export { createMemoryAccountStore } from "./memory/memory-account-store.js";
export { createMemoryBlobStore } from "./memory/memory-blob-store.js";
export { createMemoryImageRepository } from "./memory/memory-image-repository.js";
export {
  createMemoryKeyStore,
  definedFields,
} from "./memory/memory-key-store.js";
export { createMemoryLockService } from "./memory/memory-lock-service.js";
export { createMemoryQuotaStore } from "./memory/memory-quota-store.js";
export { createMemoryRateLimiter } from "./memory/memory-rate-limiter.js";
export type { Caller } from "./operations/context.js";
export type { CreateImageFromUrlInput } from "./operations/create-image-from-url.js";
export {
  createBlobVariantCache,
  type DeliveredVariant,
  type DeliveryOptions,
  type SignedUrl,
  signedUrlSchema,
  type VariantRequest,
} from "./operations/deliver-variant.js";
export type { ImageMetadata } from "./operations/image-facts.js";
export type {
  DownloadedImage,
  ImageIdInput,
  ImageList,
  ListImagesRequest,
  PageCursor,
} from "./operations/manage-images.js";
export type { ImagineImageInput, ModelImageInput } from "./operations/model-operations.js";
export type { RemoveBackgroundInput } from "./operations/remove-background.js";
export type { SweepOrphansResult } from "./operations/sweep-orphans.js";
export {
  OPERATIONS_TABLE,
  type OperationId,
  type OperationInput,
} from "./operations/table.js";
export {
  type FusedTransformInput,
  type ProcessImageOptions,
  processImage,
  type TransformInput,
} from "./operations/transform-image.js";
export type { UploadImageInput } from "./operations/upload-image.js";
export { parseOptions } from "./options.js";
export {
  type AccountUsage,
  createImagePipeline,
  type ImagePipeline,
  type ImagePipelineDeps,
  type ImagePipelineOptions,
  imagePipelineOptionsSchema,
} from "./pipeline.js";
export { billedUnits } from "./policies/billing.js";
export {
  type PolicyOptions,
  policyOptionsSchema,
  quotaPeriod,
  RateLimitedError,
} from "./policies/limits-policy.js";
export {
  type MemoryBudgetOptions,
  memoryBudgetOptionsSchema,
} from "./policies/memory-budget.js";
export {
  type ModelCircuitOptions,
  modelCircuitOptionsSchema,
} from "./policies/model-circuit.js";
export {
  DEFAULT_TEST_WATERMARK,
  type TestWatermark,
} from "./policies/test-watermark.js";
export {
  type UrlImportOptions,
  urlImportOptionsSchema,
} from "./policies/url-import-policy.js";
export {
  type WorkGateStats,
  type WorkQueueOptions,
  workQueueOptionsSchema,
} from "./policies/work-gate.js";
export type {
  AccountRecord,
  AccountStore,
} from "./ports/account-store.js";
export type {
  BackgroundRemovalOptions,
  BackgroundRemovalRequest,
  BackgroundRemover,
} from "./ports/background-remover.js";
export {
  assertBlobKey,
  type BlobEntry,
  type BlobInfo,
  type BlobMetadata,
  type BlobStore,
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
export {
  type BlurInput,
  blurSchema,
  type ConvertInput,
  type CropInput,
  classifySchema,
  convertSchema,
  createImageFromUrlSchema,
  cropSchema,
  type ExtractFormattedTextInput,
  extractFormattedTextSchema,
  IMAGINE_MODELS,
  type ImagineInput,
  imagePathSchema,
  imagineSchema,
  listImagesSchema,
  MAX_TRANSFORM_STEPS,
  type MirrorInput,
  type ModulateInput,
  mirrorSchema,
  modulateSchema,
  POSITIONS,
  type ResizeInput,
  type RotateInput,
  removeBackgroundSchema,
  resizeSchema,
  rotateSchema,
  type TransformBodyInput,
  type TransformStepInput,
  type TransformStepOp,
  transformSchema,
  uploadImageSchema,
  VISUALIZE_MODELS,
  type VisualizeInput,
  visualizeSchema,
  type WatermarkInput,
  watermarkSchema,
} from "./schemas.js";
export {
  BLACK,
  parseColor,
  type Rgba,
} from "./transforms/color.js";
export {
  rotatedSize,
  type Size,
  stepOutputSize,
} from "./transforms/plan.js";
export {
  type BlurStep,
  type CropStep,
  type MirrorStep,
  type ModulateStep,
  type OutputOptions,
  type OverlayLayer,
  type OverlayStep,
  type Position,
  type ResizeStep,
  type RotateStep,
  TRANSFORM_STEP_TYPES,
  type TransformStep,
  type TransformStepType,
} from "./transforms/steps.js";
