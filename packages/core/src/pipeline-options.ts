import { z } from "zod";
import { createRandomIdGenerator } from "./ids.js";
import { limitsSchema } from "./limits.js";
import { createMemoryAccountStore } from "./memory/memory-account-store.js";
import { createMemoryLockService } from "./memory/memory-lock-service.js";
import { createMemoryQuotaStore } from "./memory/memory-quota-store.js";
import { createMemoryRateLimiter } from "./memory/memory-rate-limiter.js";
import type { PipelineContext } from "./operations/context.js";
import { deliveryOptionsSchema } from "./operations/deliver-variant.js";
import { policyOptionsSchema } from "./policies/limits-policy.js";
import { createMemoryBudget, memoryBudgetOptionsSchema } from "./policies/memory-budget.js";
import { modelCircuitOptionsSchema } from "./policies/model-circuit.js";
import { DEFAULT_TEST_WATERMARK } from "./policies/test-watermark.js";
import { createUrlImportPolicy, urlImportOptionsSchema } from "./policies/url-import-policy.js";
import { workQueueOptionsSchema } from "./policies/work-gate.js";
import type { AccountStore } from "./ports/account-store.js";
import type { BackgroundRemover } from "./ports/background-remover.js";
import type { BlobStore } from "./ports/blob-store.js";
import type { Clock } from "./ports/clock.js";
import { systemClock } from "./ports/clock.js";
import type { IdGenerator } from "./ports/id-generator.js";
import type { ImageCodec } from "./ports/image-codec.js";
import type { ImageFetcher } from "./ports/image-fetcher.js";
import type { ImagePublisher } from "./ports/image-publisher.js";
import type { ImageRepository } from "./ports/image-repository.js";
import type { KeyStore } from "./ports/key-store.js";
import type { LockService } from "./ports/lock-service.js";
import type { Logger } from "./ports/logger.js";
import { silentLogger } from "./ports/logger.js";
import type { MemoryReleaser } from "./ports/memory-releaser.js";
import type { ModelPorts } from "./ports/models.js";
import type { OriginSource } from "./ports/origin-source.js";
import type { PlaceholderEncoder } from "./ports/placeholder-encoder.js";
import type { QuotaStore } from "./ports/quota-store.js";
import type { RateLimiter } from "./ports/rate-limiter.js";
import type { VariantCache, VariantSigner } from "./ports/variant-cache.js";

/** The adapters a pipeline runs on, as one object with named fields. */
export interface ImagePipelineDeps {
  codec: ImageCodec;
  blobStore: BlobStore;
  images: ImageRepository;
  /**
   * API keys, read by `authenticate`. A library pipeline that never authenticates (its own code
   * makes the callers) needs none; `authenticate` then fails with `INVALID_CONFIGURATION`.
   */
  keys?: KeyStore;
  /**
   * Makes published copies public (`createBlobStorePublisher`). Without one, publish and unpublish
   * (and deleting an image published elsewhere) fail with `INVALID_CONFIGURATION`.
   */
  publisher?: ImagePublisher;
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
   * Sources of origin-image delivery by origin name (`createHttpOriginSource`, `createS3OriginSource`,
   * `createFsOriginSource`); their settings are `delivery.origins.{name}`. See `deliverOriginVariant`.
   */
  origins?: Readonly<Record<string, OriginSource>>;
  /**
   * Where fetched originals of origin images are kept. @default on `blobStore` under `originals/`,
   * LRU-bounded by `originalCacheBytes`
   */
  originalCache?: VariantCache;
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
  /** Bytes of fetched originals of origin images kept by the default original cache (on the blob store). @default 512 MiB */
  originalCacheBytes: z
    .number()
    .int()
    .positive()
    .default(512 * 1024 * 1024),
  /**
   * Circuit breaker of the model-backed operations (per model): after `failureThreshold` provider
   * failures in a row, calls fail fast with `MODEL_UNAVAILABLE` for `cooldownMs`, then one probe
   * goes through. `false` turns it off. @default { failureThreshold: 5, cooldownMs: 30000 }
   */
  modelCircuit: modelCircuitOptionsSchema.default({ failureThreshold: 5, cooldownMs: 30_000 }),
});

export type ImagePipelineOptions = z.input<typeof imagePipelineOptionsSchema>;

/**
 * The context every operation runs on: the adapters of `deps`, with the in-memory defaults of the
 * optional ones, and the validated settings. `variants` is set once the pipeline made its cache.
 */
export function resolvePipelineContext(
  deps: ImagePipelineDeps,
  settings: z.output<typeof imagePipelineOptionsSchema>,
): PipelineContext {
  return {
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
}
