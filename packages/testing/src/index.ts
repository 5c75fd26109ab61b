export {
  type BackgroundRemoverConformanceOptions,
  describeBackgroundRemoverConformance,
} from "./conformance/background-remover.js";
export {
  type BlobStoreConformanceCapabilities,
  type BlobStoreConformanceOptions,
  type BlobStoreTestContext,
  describeBlobStoreConformance,
  INVALID_BLOB_KEYS,
} from "./conformance/blob-store.js";
export {
  type ClassifierAnswer,
  type ClassifierConformanceOptions,
  type ClassifierReceived,
  type ClassifierTestContext,
  describeClassifierConformance,
} from "./conformance/classifier.js";
export {
  type BindingOrigin,
  createFetchDriver,
  createHttpBindingPipeline,
  describeHttpBindingConformance,
  type HttpBindingConformanceOptions,
  type HttpBindingPipeline,
  type HttpBindingRequest,
  type HttpBindingResponse,
  type HttpBindingTestContext,
} from "./conformance/http-binding.js";
export {
  describeImageCodecConformance,
  type ImageCodecConformanceOptions,
  type ImageCodecSuiteGroup,
} from "./conformance/image-codec.js";
export {
  describeImageFetcherConformance,
  type FetcherTestNetwork,
  type ImageFetcherConformanceOptions,
} from "./conformance/image-fetcher.js";
export {
  describeImageGeneratorConformance,
  type GeneratorAnswer,
  type GeneratorReceived,
  type ImageGeneratorConformanceOptions,
  type ImageGeneratorTestContext,
} from "./conformance/image-generator.js";
export {
  describeImagePublisherConformance,
  type ImagePublisherConformanceOptions,
  type ImagePublisherSubject,
} from "./conformance/image-publisher.js";
export {
  conformanceImageId,
  conformanceImageRecord,
  describeImageRepositoryConformance,
  type ImageRepositoryConformanceOptions,
  type ImageRepositoryTestContext,
} from "./conformance/image-repository.js";
export {
  conformanceKeyRecord,
  describeKeyStoreConformance,
  type KeyStoreConformanceOptions,
  type KeyStoreTestContext,
} from "./conformance/key-store.js";
export {
  type AccountStoreConformanceOptions,
  createManualClock,
  describeAccountStoreConformance,
  describeQuotaStoreConformance,
  describeRateLimiterConformance,
  type ManualClock,
  type QuotaStoreConformanceOptions,
  type RateLimiterConformanceOptions,
} from "./conformance/limits.js";
export {
  describeLockServiceConformance,
  type LockServiceConformanceOptions,
  type LockServiceTestContext,
} from "./conformance/lock-service.js";
export {
  describeMemoryReleaserConformance,
  type MemoryReleaserConformanceOptions,
} from "./conformance/memory-releaser.js";
export {
  conformanceModelImage,
  type ModelPortConformanceOptions,
  type ModelPortTestContext,
  type ModelUpstream,
  modelFailure,
  type UpstreamCall,
  type UpstreamFault,
} from "./conformance/model-ports.js";
export {
  describeOriginSourceConformance,
  type OriginFixture,
  type OriginSourceConformanceOptions,
} from "./conformance/origin-source.js";
export {
  describeTextExtractorConformance,
  type TextExtractorConformanceCapabilities,
  type TextExtractorConformanceContext,
  type TextExtractorConformanceOptions,
  type TextExtractorTestContext,
} from "./conformance/text-extractor.js";
export {
  describeVariantCacheConformance,
  type VariantCacheConformanceOptions,
} from "./conformance/variant-cache.js";
export {
  describeVisionModelConformance,
  type VisionAnswer,
  type VisionModelConformanceOptions,
  type VisionModelTestContext,
  type VisionReceived,
} from "./conformance/vision-model.js";
export {
  alphaMaskIoU,
  BACKGROUND_FIXTURE_HEIGHT,
  BACKGROUND_FIXTURE_JPEG_QUALITY,
  BACKGROUND_FIXTURE_WIDTH,
  BACKGROUND_FIXTURES,
  backgroundFixture,
  decodeAlpha,
  EASY_BACKGROUND_FIXTURES,
  ENCLOSED_BACKGROUND_FIXTURES,
  HARD_BACKGROUND_FIXTURES,
  type MaskFixture,
  orientedFixtureJpeg,
} from "./fixtures/background.js";
export {
  declaredSizeBomb,
  hugeCanvasAnimatedWebp,
  losslessWebpBomb,
  manyFramesGif,
  manyPagesTiff,
} from "./fixtures/bombs.js";
export { OCR_DOCUMENT_SUITE, type SuiteDocument } from "./fixtures/document-suite.js";
export {
  BODY_FONT_SIZE,
  characterErrorRate,
  type DocumentBlock,
  type DocumentSpec,
  documentMarkdown,
  documentPlain,
  documentStructure,
  documentSvg,
  documentText,
  editDistance,
  HEADING_SIZES,
  identifyDocument,
  type MarkdownStructure,
  MEMO_DOCUMENT,
  NOTICE_DOCUMENT,
  normalizeForCer,
  parseMarkdownStructure,
  photoLikeImage,
  REPORT_DOCUMENT,
  type RenderDocumentOptions,
  type RenderedDocument,
  renderDocument,
} from "./fixtures/documents.js";
export {
  Colors,
  colorDistance,
  DEFAULT_QUADRANTS,
  decodeRaw,
  describeEncoded,
  type EncodeOptions,
  edgeContrast,
  encodeAnimation,
  encodePixels,
  GARBAGE_BYTES,
  GIF_BYTES,
  HEIC_HEVC_BYTES,
  halvesImage,
  hue,
  hueDistance,
  luminance,
  luminanceStats,
  meanOf,
  meanSaturation,
  noiseImage,
  orientedJpeg,
  type Pixel,
  paintPixels,
  pixelAt,
  pngBomb,
  type Quadrants,
  quadrantsImage,
  type RawImage,
  type Region,
  SVG_BYTES,
  saturation,
  solidImage,
  topBottomImage,
  truncate,
} from "./fixtures/images.js";
export { type CorpusPhoto, photoCorpus, photoCorpusDir } from "./fixtures/photos.js";
export { createMemoryOriginSource, type MemoryOriginSource } from "./memory-origin-source.js";
export {
  type ConnectionSpy,
  createTestCertificates,
  installConnectionSpy,
  type SpiedConnection,
  startTestHttpsServer,
  type TestCertificates,
  type TestHttpsServer,
} from "./network.js";
export {
  chatCompletion,
  defaultOpenAiReply,
  imagesResponse,
  type OpenAiCompatibleServer,
  type OpenAiHandler,
  type OpenAiReply,
  type RecordedOpenAiRequest,
  startOpenAiCompatibleServer,
} from "./openai-server.js";
export { childProcesses } from "./processes.js";
export { startRedisServer, type TestRedisServer } from "./redis-server.js";
export { startS3Server, type TestS3Server } from "./s3-server.js";
export {
  keepUploadingSlowly,
  type SlowUpload,
  type SlowUploadOptions,
  slowUpload,
  type UploadAnswer,
  uploadOnce,
} from "./slow-uploads.js";
export { waitUntil } from "./wait.js";
