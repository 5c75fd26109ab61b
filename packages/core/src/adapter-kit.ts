/**
 * `@pixport/core/adapter-kit`: what an adapter author needs beside the ports, under the same
 * semver promise as `@pixport/core` (a removal or an incompatible change is a major release). The
 * first-party adapters use only this entry and `@pixport/core`, so a third-party adapter can do
 * everything they do. See docs/adapter-kit.md.
 *
 * - Codec kit: {@link defineImageCodec}, the shared codec errors, the transform steps a codec
 *   receives and their output sizes, the automatic quality's search and probe.
 * - {@link SourceCache}: decoded sources kept between requests.
 * - Pagination of image listings for ImageRepository implementations.
 * - Blob keys: where an image's private bytes and public copy live, and the key check every
 *   BlobStore applies.
 * - The format table's derived lists and lookups (media types, extensions, spellings, messages).
 * - Background removers' shared cut-out steps (opening and size check, alpha lowering, the PNG join
 *   on a `sharp` the adapter passes in).
 * - Origin sources' shared refusals and the freshness an origin's `Cache-Control` declares.
 * - Sweeping temporary directories left by processes that crashed.
 * - Options parsing and small helpers adapters share.
 */

export {
  AUTO_QUALITY_PROBES,
  type AutoQualityEncoder,
  type AutoQualityTarget,
  correctedQuality,
  encodeAtAutoQuality,
  type PixelData,
  type QualityPoint,
  qualityProbe,
  searchQuality,
} from "./auto-quality.js";
export {
  type CutoutPixels,
  checkRemovalImageSize,
  cutoutPng,
  decodeCutoutPixels,
  lowerAlpha,
  openRemovalImage,
  type RawPixels,
  type RemovalImage,
  type SharpLike,
  type SharpLikeMetadata,
  type SharpLikePipeline,
  undecodableRemovalImage,
} from "./background-cutout.js";
export { publicKeyFor } from "./blob-store-publisher.js";
export { imageTooLarge, invalidImage, unsupportedOperation } from "./codec-errors.js";
export { defineImageCodec } from "./codec-kit.js";
export {
  ANIMATED_FORMATS,
  acceptedFormats,
  BROWSER_FORMATS,
  blobKeyFor,
  FILE_EXTENSIONS,
  FORMAT_LIST,
  type FormatSpelling,
  formatFromSpelling,
  formatHasAlpha,
  formatList,
  formatSpellings,
  MIME_TYPES,
} from "./image.js";
export { readImageHeader, type StoredHeader } from "./image-header.js";
export { NOT_KEPT, SourceCache } from "./kept-sources.js";
export { formatBytes } from "./limits.js";
export { LruMap, type LruOptions } from "./lru.js";
export { definedFields } from "./memory/memory-key-store.js";
export { compareNewestFirst, paginate } from "./memory/paginate.js";
export { parseOptions } from "./options.js";
export { cacheControlMaxAge, originError, originNotImage, originTooLarge } from "./origin-kit.js";
export { assertBlobKey } from "./ports/blob-store.js";
export type { OriginGetRequest, OriginValidators } from "./ports/origin-source.js";
export { type AcquireOptions, type Release, Semaphore, type SemaphoreOptions } from "./semaphore.js";
export {
  type OwnerlessDirectorySweep,
  sweepOwnerlessDirectories,
  sweepTemporaryDirectories,
  type TemporaryDirectoryHost,
} from "./temp-directories.js";
export type { Rgba } from "./transforms/color.js";
export { rotatedSize, type Size, stepOutputSize } from "./transforms/plan.js";
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
