import type {
  AccountStore,
  BackgroundRemover,
  BlobStore,
  Clock,
  IdGenerator,
  ImageCodec,
  ImageFetcher,
  ImagePipeline,
  ImagePipelineOptions,
  ImagePublisher,
  ImageRepository,
  KeyStore,
  LockService,
  Logger,
  MemoryReleaser,
  ModelPorts,
  OriginSource,
  PlaceholderEncoder,
  QuotaStore,
  RateLimiter,
  VariantCache,
  VariantSigner,
} from "@pixport/core";
import type { HttpHandler, HttpHandlerOptions } from "@pixport/http";
import type { PixportLifecycle } from "./lifecycle.js";

/**
 * A typed token: a symbol that remembers the type registered under it. The type is a phantom
 * (never present at run time); it lets {@link resolve} return `T` without a cast at the call site.
 */
export type Token<T> = symbol & { readonly __pixportToken?: T };

/** The type a token stands for. */
export type TokenType<K> = K extends Token<infer T> ? T : never;

const token = <T>(name: string) => Symbol.for(`pixport.${name}`) as Token<T>;

/**
 * One token per port of `createImagePipeline`, plus the composed results. Every symbol is
 * `Symbol.for("pixport.<Name>")`, so two copies of this package (a bundler duplicating it) still
 * agree on the tokens.
 *
 * @example
 * ```ts
 * container.register(Tokens.BlobStore, { useValue: myStore });
 * ```
 */
export const Tokens = {
  Codec: token<ImageCodec>("ImageCodec"),
  BlobStore: token<BlobStore>("BlobStore"),
  /** Where published copies live (the publisher's target; read by URL import of own URLs). */
  PublicBlobStore: token<BlobStore>("PublicBlobStore"),
  ImageRepository: token<ImageRepository>("ImageRepository"),
  KeyStore: token<KeyStore>("KeyStore"),
  AccountStore: token<AccountStore>("AccountStore"),
  QuotaStore: token<QuotaStore>("QuotaStore"),
  RateLimiter: token<RateLimiter>("RateLimiter"),
  /** Serialises publish, unpublish and delete of one image (shared across nodes on scale-out). */
  Locks: token<LockService>("LockService"),
  Publisher: token<ImagePublisher>("ImagePublisher"),
  /** Optional: without one, create-from-URL imports own-storage URLs only. */
  Fetcher: token<ImageFetcher>("ImageFetcher"),
  Clock: token<Clock>("Clock"),
  Logger: token<Logger>("Logger"),
  IdGenerator: token<IdGenerator>("IdGenerator"),
  /** Optional: the model ports of imagine, visualize, classify and extract-formatted-text. */
  Models: token<ModelPorts>("ModelPorts"),
  /** Optional: the engine of remove-background. */
  BackgroundRemover: token<BackgroundRemover>("BackgroundRemover"),
  /**
   * Optional: gives the allocator's free memory back once the pipeline's memory budget has been
   * idle after a large job (`createAllocatorReleaser()` from `@pixport/allocator`).
   */
  MemoryReleaser: token<MemoryReleaser>("MemoryReleaser"),
  /** Optional: the ThumbHash/BlurHash encoder of image metadata (`@pixport/placeholders`). */
  Placeholders: token<PlaceholderEncoder>("PlaceholderEncoder"),
  /** Optional: signs and verifies variant URLs (`createVariantSigner(keys)` from `@pixport/url-signer`). */
  VariantSigner: token<VariantSigner>("VariantSigner"),
  /** Optional: where delivered variants are kept (default: the blob store under `variants/`). */
  VariantCache: token<VariantCache>("VariantCache"),
  /** Optional: the sources of origin-image delivery by origin name (default: from `delivery.origins`). */
  OriginSources: token<Readonly<Record<string, OriginSource>>>("OriginSources"),
  /** The options of `createImagePipeline` (limits, policies, work queue...). */
  PipelineOptions: token<ImagePipelineOptions>("ImagePipelineOptions"),
  /** The options of `createHttpHandler` (public base URL, upload limits...). */
  HttpOptions: token<HttpHandlerOptions>("HttpHandlerOptions"),
  /** The pipeline composed from the tokens above. */
  Pipeline: token<ImagePipeline>("ImagePipeline"),
  /** The framework-neutral HTTP handler over {@link Tokens.Pipeline}. */
  HttpHandler: token<HttpHandler>("HttpHandler"),
  /**
   * What `registerPixport` built and owns (temp-file sweeps, engines, connections): sweep once at
   * start, close at the end.
   */
  Lifecycle: token<PixportLifecycle>("PixportLifecycle"),
} as const;
