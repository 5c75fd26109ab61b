/**
 * `@pixport/core/internal`: the building blocks other pixport packages and tests reach for, kept out of
 * the public entry so that `@pixport/core` stays the library's surface. No stability promise: these
 * may change in any release.
 */

export {
  type CutoutPixels,
  checkRemovalImageSize,
  lowerAlpha,
  undecodableRemovalImage,
} from "./background-cutout.js";
export { publicKeyFor } from "./blob-store-publisher.js";
export {
  checkCodecCapabilities,
  checkInputBytes,
  checkTransformRequest,
  uncheckedTransform,
} from "./codec-kit.js";
export { imageNotFound } from "./errors.js";
export {
  API_KEY_PATTERN,
  constantTimeEqual,
  randomString,
} from "./ids.js";
export {
  acceptedFormats,
  blobKeyFor,
  describeUnsupportedImage,
  FORMAT_LIST,
  formatFromSpelling,
  formatHasAlpha,
  toImage,
} from "./image.js";
export { readImageHeader, type StoredHeader } from "./image-header.js";
export { NOT_KEPT, SourceCache } from "./kept-sources.js";
export { compareNewestFirst, paginate } from "./memory/paginate.js";
export type { PipelineContext } from "./operations/context.js";
export { probeInput } from "./operations/context.js";
export { dominantColor, SAMPLE_SIDE } from "./operations/image-facts.js";
export {
  DEFAULT_MODEL_IMAGE_SIDE,
  DEFAULT_MODELS,
  IMAGINE_SIZE,
  MASKED_CLASSIFICATION,
} from "./operations/model-operations.js";
export { removeImageBackground } from "./operations/remove-background.js";
export { sweepOrphans } from "./operations/sweep-orphans.js";
export { isOperationId } from "./operations/table.js";
export { pipelineContext, variantsPeriod } from "./pipeline.js";
export { BILLING_UNITS } from "./policies/billing.js";
export {
  hostMatches,
  hostPatternProblem,
  normalizeHostName,
} from "./policies/host-pattern.js";
export { requestsPerMinute } from "./policies/limits-policy.js";
export {
  createMemoryBudget,
  estimateJobBytes,
  type MemoryBudget,
} from "./policies/memory-budget.js";
export {
  type CircuitStatus,
  createModelCircuitBreaker,
  guardModelPorts,
  type ModelCircuitBreaker,
} from "./policies/model-circuit.js";
export {
  SHARE_LINK_PROVIDERS,
  type ShareLinkProvider,
  type ShareLinkProviderName,
} from "./policies/share-links.js";
export { testWatermarkLayer } from "./policies/test-watermark.js";
export {
  createUrlImportPolicy,
  DEFAULT_ALLOWED_ORIGINS,
  ORIGINAL_STORAGE_BASE_URL,
  type ResolvedUrlImportOptions,
  type UrlImportDecision,
  type UrlImportPolicy,
  type UrlImportSource,
  type UrlRefusal,
} from "./policies/url-import-policy.js";
export {
  createWorkGate,
  type WorkGate,
} from "./policies/work-gate.js";
export { BLOB_KEY_PATTERN } from "./ports/blob-store.js";
export {
  colorSchema,
  formatIssues,
  imageIdSchema,
  parseAll,
  TRANSFORM_STEP_OPS,
  transformStepSchema,
  watermarkEntrySchema,
} from "./schemas.js";
export { TRANSPARENT } from "./transforms/color.js";
export { blurSteps, DIRECT_BLUR_MAX_SIGMA, planOutputSize } from "./transforms/plan.js";
