/**
 * `@pixport/core/internal`: what pixport's own non-adapter packages (server, http, container,
 * testing) and its tests need beyond the public entries: the request schemas the HTTP layer
 * validates with, the option schemas the server's configuration composes, and a few hooks into the
 * pipeline. No stability promise: any release may change these. Adapters never import it (they use
 * `@pixport/core` and `@pixport/core/adapter-kit`, a test enforces it).
 */

export { uncheckedTransform } from "./codec-kit.js";
export { validationError } from "./errors.js";
export { createRandomIdGenerator } from "./ids.js";
export { IMAGE_ID_PATTERN } from "./image.js";
export { limitsSchema } from "./limits.js";
export { CLIENT_HINT_HEADERS } from "./operations/client-hints.js";
export { signedUrlSchema } from "./operations/deliver-variant.js";
export { originNameSchema, originSettingsSchema } from "./operations/origin-url.js";
export { AUTO_QUALITY_TARGETS } from "./operations/quality-levels.js";
export { pipelineContext } from "./pipeline.js";
export { billedUnits } from "./policies/billing.js";
export { policyOptionsSchema, quotaPeriod } from "./policies/limits-policy.js";
export { estimateJobBytes, memoryBudgetOptionsSchema } from "./policies/memory-budget.js";
export { modelCircuitOptionsSchema } from "./policies/model-circuit.js";
export { testWatermarkLayer } from "./policies/test-watermark.js";
export { createUrlImportPolicy, urlImportOptionsSchema } from "./policies/url-import-policy.js";
export { workQueueOptionsSchema } from "./policies/work-gate.js";
export {
  blurSchema,
  classifySchema,
  convertSchema,
  createImageFromUrlSchema,
  cropSchema,
  extractFormattedTextSchema,
  imagePathSchema,
  imagineSchema,
  listImagesSchema,
  mirrorSchema,
  modulateSchema,
  removeBackgroundSchema,
  resizeSchema,
  rotateSchema,
  transformSchema,
  uploadImageSchema,
  visualizeSchema,
  watermarkSchema,
} from "./schemas.js";
export { blurSteps } from "./transforms/plan.js";
