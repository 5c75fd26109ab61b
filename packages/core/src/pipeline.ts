import { z } from "zod";
import { createRandomIdGenerator } from "./ids.js";
import type { Image } from "./image.js";
import { type Limits, limitsSchema } from "./limits.js";
import { createMemoryAccountStore } from "./memory/memory-account-store.js";
import { createMemoryLockService } from "./memory/memory-lock-service.js";
import { createMemoryQuotaStore } from "./memory/memory-quota-store.js";
import { createMemoryRateLimiter } from "./memory/memory-rate-limiter.js";
import { authenticate } from "./operations/authenticate.js";
import type { Caller, PipelineContext } from "./operations/context.js";
import { type CreateImageFromUrlInput, createImageFromUrl } from "./operations/create-image-from-url.js";
import {
  createBlobVariantCache,
  createVariantDelivery,
  type DeliveredVariant,
  deliveryOptionsSchema,
  type SignedUrl,
  type VariantRequest,
} from "./operations/deliver-variant.js";
import { createFactsScheduler, getImageMetadata, type ImageMetadata } from "./operations/image-facts.js";
import {
  type DownloadedImage,
  deleteImage,
  downloadImage,
  getImage,
  type ImageIdInput,
  type ImageList,
  type ListImagesRequest,
  listImages,
  parseImageId,
  publishImage,
  unpublishImage,
} from "./operations/manage-images.js";
import {
  classifyImage,
  extractFormattedText,
  type ImagineImageInput,
  imagineImage,
  type ModelImageInput,
  visualizeImage,
} from "./operations/model-operations.js";
import { type RemoveBackgroundInput, removeImageBackground } from "./operations/remove-background.js";
import { sweepExpiredTestImages } from "./operations/sweep-expired-images.js";
import { type SweepOrphansResult, sweepOrphans } from "./operations/sweep-orphans.js";
import { isOperationId, OPERATIONS_TABLE, type OperationId } from "./operations/table.js";
import {
  blurImage,
  convertImage,
  cropImage,
  mirrorImage,
  modulateImage,
  resizeImage,
  rotateImage,
  type TransformInput,
  transformImage,
  watermarkImage,
} from "./operations/transform-image.js";
import { type UploadImageInput, uploadImage } from "./operations/upload-image.js";
import { parseOptions } from "./options.js";
import { BILLING_UNITS } from "./policies/billing.js";
import { admitRequest, policyOptionsSchema, quotaPeriod, withQuota } from "./policies/limits-policy.js";
import { createMemoryBudget, memoryBudgetOptionsSchema } from "./policies/memory-budget.js";
import {
  createModelCircuitBreaker,
  guardModelPorts,
  modelCircuitOptionsSchema,
} from "./policies/model-circuit.js";
import { DEFAULT_TEST_WATERMARK } from "./policies/test-watermark.js";
import { createUrlImportPolicy, urlImportOptionsSchema } from "./policies/url-import-policy.js";
import { createWorkGate, type WorkGateStats, workQueueOptionsSchema } from "./policies/work-gate.js";
import type { AccountStore } from "./ports/account-store.js";
import type { BackgroundRemover } from "./ports/background-remover.js";
import type { BlobStore } from "./ports/blob-store.js";
import type { Classification } from "./ports/classifier.js";
import { type Clock, systemClock } from "./ports/clock.js";
import type { IdGenerator } from "./ports/id-generator.js";
import type { ImageCodec } from "./ports/image-codec.js";
import type { ImageFetcher } from "./ports/image-fetcher.js";
import type { ImagePublisher } from "./ports/image-publisher.js";
import type { ImageRepository } from "./ports/image-repository.js";
import type { KeyStore } from "./ports/key-store.js";
import type { LockService } from "./ports/lock-service.js";
import { type Logger, silentLogger } from "./ports/logger.js";
import type { MemoryReleaser } from "./ports/memory-releaser.js";
import type { ModelPorts } from "./ports/models.js";
import type { PlaceholderEncoder } from "./ports/placeholder-encoder.js";
import type { QuotaStore } from "./ports/quota-store.js";
import type { RateLimitDecision, RateLimiter } from "./ports/rate-limiter.js";
import type { TextFormat } from "./ports/text-extractor.js";
import type { VariantCache, VariantSigner } from "./ports/variant-cache.js";
import type {
  BlurInput,
  ConvertInput,
  CropInput,
  MirrorInput,
  ModulateInput,
  ResizeInput,
  RotateInput,
  TransformBodyInput,
  WatermarkInput,
} from "./schemas.js";

/** The adapters a pipeline runs on, as one object with named fields. */
export interface ImagePipelineDeps {
  codec: ImageCodec;
  blobStore: BlobStore;
  images: ImageRepository;
  keys: KeyStore;
  publisher: ImagePublisher;
  /** @default the system clock */
  clock?: Clock;
  /** @default random `image_` ids from the platform CSPRNG */
  ids?: IdGenerator;
  /** @default silent */
  logger?: Logger;
  /** Fetches remote URLs for `createImageFromUrl`; without one only own-storage URLs import. */
  fetcher?: ImageFetcher;
  /**
   * The public store published copies live in (the publisher's target). URLs under
   * `urlImport.storageBaseUrls` are read from it, never fetched.
   */
  publicBlobStore?: BlobStore;
  /** Per-key request limiter. @default in-memory (one process) */
  rateLimiter?: RateLimiter;
  /** Monthly usage counters. @default in-memory (one process) */
  quota?: QuotaStore;
  /** Account flags (upgraded from the trial). @default in-memory (one process) */
  accounts?: AccountStore;
  /**
   * Serialises publish, unpublish and delete of one image. Several processes sharing storage
   * must share it too (e.g. `createRedisLockService`). @default in-memory (one process)
   */
  locks?: LockService;
  /**
   * Model ports of imagine, visualize, classify and extract-formatted-text. Each is optional; an
   * operation whose port is missing answers `MODEL_NOT_CONFIGURED` (501).
   */
  models?: ModelPorts;
  /**
   * Signs and verifies variant URLs (`createVariantSigner(keys)` from `@pixport/url-signer`).
   * Without one only unsigned preset URLs are served.
   */
  variantSigner?: VariantSigner;
  /** Where delivered variants are kept. @default on `blobStore` under `variants/`, LRU-bounded by `variantCacheBytes` */
  variantCache?: VariantCache;
  /**
   * Encodes the ThumbHash and BlurHash placeholders of `getImageMetadata` (e.g.
   * `createThumbhashPlaceholders()` from `@pixport/placeholders`). Without one the hashes are `null`.
   */
  placeholders?: PlaceholderEncoder;
  /**
   * The remover of `remove-background` (e.g. `@pixport/background-sharp`, embedded and offline).
   * Without one that operation answers `MODEL_NOT_CONFIGURED` (501).
   */
  backgroundRemover?: BackgroundRemover;
  /**
   * Gives the allocator's free memory back once the `memoryBudget` has stayed empty for
   * `releaseAfterIdleMs` after a job of `releaseAfterBytes` or more, or as soon as it is empty
   * when such a job ran `releaseAfterJobMs` or longer (`createAllocatorReleaser()`
   * from `@pixport/allocator`). Without one (or without a budget) nothing is released: the
   * allocator keeps what it keeps.
   */
  memoryReleaser?: MemoryReleaser;
}

/** Options of {@link createImagePipeline}, validated once at construction. */
export const imagePipelineOptionsSchema = z.object({
  /** Safety limits; every field has a default. */
  limits: limitsSchema.default(limitsSchema.parse({})),
  /**
   * Quality (1..100) used when jpeg/webp images are re-encoded by uploads and transforms other
   * than `convert` (which takes its own `quality`, default 100).
   * @default 90
   */
  encodeQuality: z.number().int().min(1).max(100).default(90),
  /** Rate limits, trial quota, retention and the outage policy (contract sections 1.2 and 3). */
  policies: policyOptionsSchema.default(policyOptionsSchema.parse({})),
  /**
   * The mark stamped on every image a test key produces; a default ships. `image` is an encoded
   * png (with alpha), jpeg or webp of `width` x `height` px.
   */
  testWatermark: z
    .object({
      image: z.instanceof(Uint8Array),
      width: z.number().int().positive(),
      height: z.number().int().positive(),
      opacity: z.number().min(0.05).max(1).default(0.5),
    })
    .optional(),
  /** Create-from-URL: allowed origins, own storage bases, redirects and deadlines. */
  urlImport: urlImportOptionsSchema.default(urlImportOptionsSchema.parse({})),
  /**
   * Back-pressure: bounds the image jobs (creates, transforms, remove-background) running and
   * waiting at once; beyond, calls reject at once with `OVERLOADED`, before any quota is reserved.
   * Absent: no bound (a library caller controls its own concurrency). The prebuilt server sets it.
   */
  workQueue: workQueueOptionsSchema.optional(),
  /**
   * Memory budget of the image jobs of this node: each job's peak pixel memory is estimated from
   * the header and its steps before decoding; jobs run while their sum fits `maxBytes`, others wait
   * up to `maxWaitMs` (then `OVERLOADED`), and a job bigger than the whole budget is a 422 naming
   * the field. Absent: no budget (a library caller sizes its own host). The prebuilt server sets
   * it (1 GiB, for a 2 GB host).
   */
  memoryBudget: memoryBudgetOptionsSchema.optional(),
  /**
   * Variant delivery: `GET {baseUrl}/v/{signature}/{image_id}/{modifiers}.{ext}` (signed with
   * `variantSigner`), presets, unsigned URLs. See `deliverVariant`.
   */
  delivery: deliveryOptionsSchema.default(deliveryOptionsSchema.parse({})),
  /**
   * Compute the facts of new images (`getImageMetadata`) in the background while no image job
   * runs; call `stopBackgroundWork()` before closing the stores. Off: they are computed by the
   * first metadata request of each image. The prebuilt server turns it on. @default false
   */
  backgroundFacts: z.boolean().default(false),
  /** Bytes of delivered variants kept by the default variant cache (on the blob store). @default 256 MiB */
  variantCacheBytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
  /**
   * Circuit breaker of the model-backed operations (per model): after `failureThreshold` provider
   * failures in a row, calls fail fast with `MODEL_UNAVAILABLE` for `cooldownMs`, then one probe
   * goes through. `false` turns it off. @default { failureThreshold: 5, cooldownMs: 30000 }
   */
  modelCircuit: modelCircuitOptionsSchema.default({ failureThreshold: 5, cooldownMs: 30_000 }),
});

export type ImagePipelineOptions = z.input<typeof imagePipelineOptionsSchema>;

/** Options of a typed library call. */
export interface CallOptions {
  /** The caller gave up: a job still waiting for a slot or for memory is dropped. */
  signal?: AbortSignal;
}

/** Every operation of the IMG Processing API in scope, bound to one set of adapters. */
/** An account's usage of one month: what {@link ImagePipeline.usage} answers. */
export interface AccountUsage {
  /** The month, `YYYY-MM` (UTC). */
  period: string;
  /** Billed images (processed images, uploads, imports) in the month. */
  images: number;
  /** The account's monthly cap: `policies.trialImagesPerMonth` for a trial account, `null` when upgraded. */
  limit: number | null;
  /** Variants computed for its images' delivery URLs in the month (cache misses; not billed). */
  variants: number;
}

export interface ImagePipeline {
  /** The limits the pipeline enforces (upload bytes, pixels, frames, output size, ...). */
  readonly limits: Readonly<Limits>;
  /** The account's usage of this month, or of the month of `at`. */
  usage(accountId: string, at?: Date): Promise<AccountUsage>;
  /** Bytes reserved by image jobs against the `memoryBudget`; `null` without one. */
  memory(): { reservedBytes: number; waiting: number; maxBytes: number } | null;
  authenticate(apiKey: string | null | undefined): Promise<Caller>;
  /**
   * Counts one request of the caller against its per-minute limit. Resolves the decision (for
   * rate-limit headers; `null` when the limiter is down and the policy is fail-open); rejects with
   * `RATE_LIMITED` (a {@link RateLimitedError}) when the limit is used up. Given the `operationId`
   * of an image job (a create, a transform, remove-background), it first rejects with `OVERLOADED`
   * when the work queue is full, so a request the node refuses does not use up the key's limit.
   */
  admit(caller: Caller, operationId?: string): Promise<RateLimitDecision | null>;
  /**
   * The model circuit breaker's circuits used so far (`{port}:{model}`, e.g. `vision:gpt-4o`) and
   * their state; empty when the breaker is off. For metrics and health pages.
   */
  modelCircuits(): { key: string; status: "closed" | "open" | "half-open" }[];
  /**
   * Stops the pipeline's background work (the facts of new images): the image in progress is
   * finished, the rest is left to first metadata requests. Call it before closing the stores.
   */
  stopBackgroundWork(): Promise<void>;
  /** Jobs running and waiting in the `workQueue` gate; `null` without a `workQueue`. */
  load(): WorkGateStats | null;
  /** Retention: removes test-stage images older than `policies.testRetentionDays`. Returns the count. */
  sweepExpiredTestImages(): Promise<number>;
  /**
   * Repair: removes private bytes no record refers to and public copies without a published
   * record, written more than `graceMs` ago (default 1 hour), from stores that can list keys.
   */
  sweepOrphans(options?: { graceMs?: number }): Promise<SweepOrphansResult>;
  uploadImage(caller: Caller, input: UploadImageInput): Promise<Image>;
  createImageFromUrl(caller: Caller, input: CreateImageFromUrlInput): Promise<Image>;
  getImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  /**
   * The image's facts: size, format, frames, `has_alpha`, `dominant_color` and its ThumbHash and
   * BlurHash placeholders. Computed once when the image is created (older images: on first call,
   * then stored); not billed.
   */
  getImageMetadata(caller: Caller, input: ImageIdInput): Promise<ImageMetadata>;
  /**
   * `GET /v/{signature}/{image_id}/{modifiers}.{ext}`: a variant of a published image (or of any
   * image of a URL made by `createSignedUrl`, until it expires), computed once and cached. No key,
   * not billed, not rate limited; misses take a slot of the work gate.
   */
  deliverVariant(request: VariantRequest): Promise<DeliveredVariant>;
  /** `POST /v1/images/{image_id}/signed-url`: an expiring variant URL for the owner's image. Not billed. */
  createSignedUrl(caller: Caller, input: TransformInput): Promise<SignedUrl>;
  listImages(caller: Caller, input: ListImagesRequest): Promise<ImageList>;
  deleteImage(caller: Caller, input: ImageIdInput): Promise<void>;
  downloadImage(caller: Caller, input: ImageIdInput): Promise<DownloadedImage>;
  publishImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  unpublishImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  mirrorImage(caller: Caller, input: TransformInput): Promise<Image>;
  convertImage(caller: Caller, input: TransformInput): Promise<Image>;
  resizeImage(caller: Caller, input: TransformInput): Promise<Image>;
  cropImage(caller: Caller, input: TransformInput): Promise<Image>;
  rotateImage(caller: Caller, input: TransformInput): Promise<Image>;
  modulateImage(caller: Caller, input: TransformInput): Promise<Image>;
  blurImage(caller: Caller, input: TransformInput): Promise<Image>;
  watermarkImage(caller: Caller, input: TransformInput): Promise<Image>;
  /** `POST /v1/images/{image_id}/transform`: up to 10 steps, one decode/encode, one new image. */
  transformImage(caller: Caller, input: TransformInput): Promise<Image>;
  /**
   * Typed library calls: the same operations with the body typed from its zod schema (`z.input`),
   * so a misspelt field or a wrong type is a compile error. Runtime validation still runs (for
   * JavaScript callers), with the same 422 issues as over HTTP.
   */
  transform(caller: Caller, imageId: string, body: TransformBodyInput, options?: CallOptions): Promise<Image>;
  resize(caller: Caller, imageId: string, body: ResizeInput, options?: CallOptions): Promise<Image>;
  crop(caller: Caller, imageId: string, body: CropInput, options?: CallOptions): Promise<Image>;
  rotate(caller: Caller, imageId: string, body: RotateInput, options?: CallOptions): Promise<Image>;
  mirror(caller: Caller, imageId: string, body: MirrorInput, options?: CallOptions): Promise<Image>;
  modulate(caller: Caller, imageId: string, body: ModulateInput, options?: CallOptions): Promise<Image>;
  blur(caller: Caller, imageId: string, body: BlurInput, options?: CallOptions): Promise<Image>;
  watermark(caller: Caller, imageId: string, body: WatermarkInput, options?: CallOptions): Promise<Image>;
  convert(caller: Caller, imageId: string, body: ConvertInput, options?: CallOptions): Promise<Image>;
  /** `POST /v1/images/{image_id}/remove-background` (billed 2, contract P8). */
  removeImageBackground(caller: Caller, input: RemoveBackgroundInput): Promise<Image>;
  imagineImage(caller: Caller, input: ImagineImageInput): Promise<Image>;
  visualizeImage(caller: Caller, input: ModelImageInput): Promise<{ response: string }>;
  classifyImage(caller: Caller, input: ModelImageInput): Promise<Classification>;
  extractFormattedText(
    caller: Caller,
    input: ModelImageInput,
  ): Promise<{ format: TextFormat; content: string }>;
}

/**
 * Builds every operation over one set of adapters.
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({
 *   codec: createSharpCodec(),
 *   blobStore, images, keys, publisher,
 * });
 * const caller = await pipeline.authenticate(request.headers["x-api-key"]);
 * const image = await pipeline.resizeImage(caller, { imageId, body: { width: 800 } });
 * ```
 */
export function createImagePipeline(
  deps: ImagePipelineDeps,
  options: ImagePipelineOptions = {},
): ImagePipeline {
  const settings = parseOptions(imagePipelineOptionsSchema, options, "pipeline");
  const context: PipelineContext = {
    codec: deps.codec,
    blobStore: deps.blobStore,
    images: deps.images,
    keys: deps.keys,
    publisher: deps.publisher,
    locks: deps.locks ?? createMemoryLockService(),
    clock: deps.clock ?? systemClock,
    ids: deps.ids ?? createRandomIdGenerator(),
    logger: deps.logger ?? silentLogger,
    limits: settings.limits,
    encodeQuality: settings.encodeQuality,
    policy: {
      rateLimiter: deps.rateLimiter ?? createMemoryRateLimiter({ clock: deps.clock ?? systemClock }),
      quota: deps.quota ?? createMemoryQuotaStore(),
      accounts: deps.accounts ?? createMemoryAccountStore(),
      clock: deps.clock ?? systemClock,
      policies: settings.policies,
      onOutage: (what, error) =>
        (deps.logger ?? silentLogger).warn?.(`${what} unavailable; continuing without it (fail-open)`, {
          error: String(error),
        }),
    },
    testWatermark: settings.testWatermark ?? DEFAULT_TEST_WATERMARK,
    placeholders: deps.placeholders,
    variants: undefined,
    memory:
      settings.memoryBudget === undefined
        ? undefined
        : createMemoryBudget(
            settings.memoryBudget,
            deps.memoryReleaser === undefined
              ? undefined
              : // The budget calls this as a job ends (at once after a long one): a releaser that
                // breaks its contract (throws, or rejects) must not fail that job, nor the process.
                () =>
                  void Promise.resolve()
                    .then(() => deps.memoryReleaser?.release())
                    .catch((error: unknown) =>
                      (deps.logger ?? silentLogger).warn?.("the memory releaser failed", {
                        error: String(error),
                      }),
                    ),
          ),
    urlImport: {
      policy: createUrlImportPolicy(settings.urlImport),
      fetcher: deps.fetcher,
      publicStore: deps.publicBlobStore,
    },
  };
  const missing = ["jpeg", "png", "webp"].filter(
    (format) => !context.codec.capabilities.outputFormats.includes(format as never),
  );
  if (missing.length > 0) {
    context.logger.warn?.(`codec ${context.codec.name} cannot encode: ${missing.join(", ")}`);
  }
  const breaker =
    settings.modelCircuit === false
      ? undefined
      : createModelCircuitBreaker(settings.modelCircuit, context.clock);
  const models: ModelPorts =
    breaker === undefined ? { ...deps.models } : guardModelPorts({ ...deps.models }, breaker);
  const gate = settings.workQueue === undefined ? undefined : createWorkGate(settings.workQueue);
  const variantCache =
    deps.variantCache ?? createBlobVariantCache(deps.blobStore, { maxBytes: settings.variantCacheBytes });
  context.variants = variantCache;
  // Billable operations running now, gated or not (an embedded OCR or ONNX model works on this
  // node's CPU without a slot of the gate): background facts wait for all of them.
  let operationsInFlight = 0;
  // ...and for a short quiet time after the last one ended: a client sending one request after
  // another leaves gaps of a few ms, and facts started in such a gap ran beside its next request
  // (remove-background over HTTP was 1.15-1.17x the library call, the facts' two full decodes of
  // each new cut-out competing with the next inference).
  let lastOperationEnded = Number.NEGATIVE_INFINITY;
  const facts = createFactsScheduler(
    context,
    () =>
      operationsInFlight > 0 ||
      (gate?.stats().active ?? 0) > 0 ||
      Date.now() - lastOperationEnded < FACTS_QUIET_MS,
  );
  if (settings.backgroundFacts) context.afterCreate = (record) => facts.schedule(record);
  const delivery = createVariantDelivery(
    context,
    {
      signer: deps.variantSigner,
      cache: variantCache,
      gate,
      // Variants are delivery, not processed images: never billed, but each computed one (a cache
      // miss) is counted per account in its own counter (`variantsPeriod`), shown by `accounts show`.
      onMiss: (accountId) => {
        context.policy.quota
          .reserve({
            accountId,
            period: variantsPeriod(context.clock.now()),
            units: 1,
            limit: Number.MAX_SAFE_INTEGER,
          })
          .catch((error: unknown) =>
            context.logger.warn?.("could not count a variant", { accountId, error: String(error) }),
          );
      },
    },
    settings.delivery,
  );
  /** Wraps a billable operation in the monthly quota (reserve first, give back on failure). */
  function billed<I, O>(operationId: OperationId, operation: (caller: Caller, input: I) => Promise<O>) {
    return async (caller: Caller, input: I) => {
      operationsInFlight += 1;
      try {
        return await withQuota(context.policy, caller, BILLING_UNITS[operationId] ?? 0, () =>
          operation(caller, input),
        );
      } finally {
        operationsInFlight -= 1;
        lastOperationEnded = Date.now();
      }
    };
  }
  /**
   * A billable image job: a slot of the work gate first (an overloaded node refuses before any
   * quota is reserved), then the quota. Gated: creates, transforms and remove-background, whose
   * work is pixels on this node. Not gated: publishing (a copy of bytes) and the model-backed
   * operations, which mostly wait on a provider (imagine takes seconds by nature) and are bounded by
   * their deadline and the model circuit breaker; holding slots while waiting would starve the
   * transforms. Embedded engines (tesseract, ONNX) have their own worker queues.
   */
  function job<I, O>(operationId: OperationId, operation: (caller: Caller, input: I) => Promise<O>) {
    const inner = billed(operationId, operation);
    if (gate === undefined) return inner;
    return (caller: Caller, input: I) =>
      gate.run(() => inner(caller, input), (input as { signal?: AbortSignal } | undefined)?.signal);
  }

  const typed =
    (method: () => (caller: Caller, input: TransformInput) => Promise<Image>) =>
    (caller: Caller, imageId: string, body: unknown, options: CallOptions = {}) =>
      method()(caller, {
        imageId,
        body,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
  const pipeline: ImagePipeline = {
    limits: context.limits,
    usage: async (accountId, at = context.clock.now()) => {
      const { quota, accounts, policies } = context.policy;
      const period = quotaPeriod(at);
      const [images, variants, account] = await Promise.all([
        quota.usage(accountId, period),
        quota.usage(accountId, variantsPeriod(at)),
        accounts.get(accountId),
      ]);
      return {
        period,
        images,
        limit: account?.upgraded === true ? null : policies.trialImagesPerMonth,
        variants,
      };
    },
    memory: () => context.memory?.stats() ?? null,
    transform: typed(() => pipeline.transformImage),
    resize: typed(() => pipeline.resizeImage),
    crop: typed(() => pipeline.cropImage),
    rotate: typed(() => pipeline.rotateImage),
    mirror: typed(() => pipeline.mirrorImage),
    modulate: typed(() => pipeline.modulateImage),
    blur: typed(() => pipeline.blurImage),
    watermark: typed(() => pipeline.watermarkImage),
    convert: typed(() => pipeline.convertImage),
    authenticate: (apiKey) => authenticate(context, apiKey),
    admit: (caller, operationId) => {
      if (
        operationId !== undefined &&
        gate !== undefined &&
        isOperationId(operationId) &&
        OPERATIONS_TABLE[operationId].gated
      ) {
        gate.assertRoom();
      }
      return admitRequest(context.policy, caller);
    },
    load: () => gate?.stats() ?? null,
    modelCircuits: () => breaker?.list() ?? [],
    stopBackgroundWork: () => facts.stop(),
    sweepExpiredTestImages: () => {
      const days = context.policy.policies.testRetentionDays;
      const createdBefore = new Date(context.clock.now().getTime() - days * 24 * 60 * 60 * 1000);
      return sweepExpiredTestImages(context, { createdBefore });
    },
    sweepOrphans: (options = {}) =>
      sweepOrphans(context, {
        writtenBefore: new Date(context.clock.now().getTime() - (options.graceMs ?? 60 * 60 * 1000)),
      }),
    uploadImage: job("uploadImage", (caller, input) => uploadImage(context, caller, input)),
    createImageFromUrl: job("createImageFromUrl", (caller, input) =>
      createImageFromUrl(context, caller, input),
    ),
    getImage: (caller, input) => getImage(context, caller, input),
    getImageMetadata: (caller, input) => getImageMetadata(context, caller, parseImageId(input)),
    deliverVariant: (request) => delivery.deliver(request),
    createSignedUrl: (caller, input) => delivery.signedUrl(caller, input),
    listImages: (caller, input) => listImages(context, caller, input),
    deleteImage: (caller, input) => deleteImage(context, caller, input),
    downloadImage: (caller, input) => downloadImage(context, caller, input),
    publishImage: billed("publishImage", (caller, input) => publishImage(context, caller, input)),
    unpublishImage: billed("unpublishImage", (caller, input) => unpublishImage(context, caller, input)),
    mirrorImage: job("mirrorImage", (caller, input) => mirrorImage(context, caller, input)),
    convertImage: job("convertImage", (caller, input) => convertImage(context, caller, input)),
    resizeImage: job("resizeImage", (caller, input) => resizeImage(context, caller, input)),
    cropImage: job("cropImage", (caller, input) => cropImage(context, caller, input)),
    rotateImage: job("rotateImage", (caller, input) => rotateImage(context, caller, input)),
    modulateImage: job("modulateImage", (caller, input) => modulateImage(context, caller, input)),
    blurImage: job("blurImage", (caller, input) => blurImage(context, caller, input)),
    watermarkImage: job("watermarkImage", (caller, input) => watermarkImage(context, caller, input)),
    transformImage: job("transformImage", (caller, input) => transformImage(context, caller, input)),
    removeImageBackground: job("removeImageBackground", (caller, input) =>
      removeImageBackground(context, deps.backgroundRemover, caller, input),
    ),
    imagineImage: billed("imagineImage", (caller, input) => imagineImage(context, models, caller, input)),
    visualizeImage: billed("visualizeImage", (caller, input) =>
      visualizeImage(context, models, caller, input),
    ),
    classifyImage: billed("classifyImage", (caller, input) => classifyImage(context, models, caller, input)),
    extractFormattedText: billed("extractFormattedText", (caller, input) =>
      extractFormattedText(context, models, caller, input),
    ),
  };
  CONTEXTS.set(pipeline, context);
  return pipeline;
}

/** Every operation id of the table is a method of the pipeline (a compile-time check). */
type _EveryOperationIsAMethod = {
  [K in OperationId]: ImagePipeline[K] extends (...args: never[]) => unknown ? true : never;
};

/** How long the node stays without billable operations before new images' facts are computed, ms. */
const FACTS_QUIET_MS = 250;

/** The counter of an account's computed variants in the month of `now` (e.g. `2026-11/variants`). */
const CONTEXTS = new WeakMap<ImagePipeline, PipelineContext>();

/**
 * The adapters and settings a pipeline runs on, for pixport's own packages and tests (exported from
 * `@pixport/core/internal` only): library code uses the pipeline's methods, `limits` and `usage()`.
 */
export function pipelineContext(pipeline: ImagePipeline): PipelineContext {
  const context = CONTEXTS.get(pipeline);
  if (context === undefined) throw new Error("not a pipeline made by createImagePipeline");
  return context;
}

export function variantsPeriod(now: Date): string {
  return `${quotaPeriod(now)}/variants`;
}
