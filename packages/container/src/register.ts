import {
  type ImageCodec,
  type ImagePipelineOptions,
  type Logger,
  type MemoryReleaser,
  type ModelPorts,
  silentLogger,
} from "@pixport/core";
import type { RequestEvent } from "@pixport/http";
import type { DependencyContainer } from "tsyringe";
import {
  type PixportContainerConfig,
  parsePixportContainerConfig,
  type ResolvedPixportContainerConfig,
} from "./config.js";
import { createLifecycle, createOwnedResources, type OwnedResources } from "./lifecycle.js";
import { isProvided, provide, resolve } from "./resolve.js";
import { Tokens } from "./tokens.js";
import { registerComposition, registerPolicyDefaults } from "./wiring/compose.js";
import { createSigner, loadTestWatermark } from "./wiring/delivery.js";
import {
  createBackgroundRemover,
  createCodec,
  createMemoryReleaser,
  createModels,
} from "./wiring/engines.js";
import { httpOptionsOf, pipelineOptionsOf } from "./wiring/options.js";
import { createOriginSources } from "./wiring/origins.js";
import { createState } from "./wiring/state.js";
import { createStorage } from "./wiring/storage.js";

/** Hooks of {@link registerPixport} that a config file cannot express. */
export interface RegisterPixportOptions {
  /** Wraps the codec the container builds (not a registered one), e.g. to time its jobs. */
  instrumentCodec?: (codec: ImageCodec) => ImageCodec;
  /** Wraps the model ports the container builds (not registered ones), e.g. to count their calls. */
  instrumentModels?: (models: ModelPorts) => ModelPorts;
  /** Called once per answered API request (an access log, metrics). */
  onRequestDone?: (event: RequestEvent) => void;
}

/**
 * Composes pixport in a tsyringe container from one config (see `pixportContainerConfigSchema`):
 * storage (memory, files or S3), image records and policy state (memory, files or Redis), the
 * codec, the engines (models, embedded OCR, background remover), delivery signing, the pipeline and
 * the HTTP handler over it. It is the only place that wires adapters; the prebuilt server is this
 * call plus a listener.
 *
 * Every token (see {@link Tokens}) keeps a registration made before this call (in this container
 * or a parent), and a registration made after it wins when first resolved (tsyringe resolves the
 * last one). Adapter packages other than the defaults are imported only when the config asks for
 * them. What the container builds (connections, workers, temp files) is owned by
 * `resolve(container, Tokens.Lifecycle)`: sweep at start, close at the end.
 *
 * No decorators and no reflect-metadata lookups: tokens and factories only, so it works with
 * esbuild, tsup and vitest, which emit no decorator metadata.
 *
 * @example
 * ```ts
 * import { container, registerPixport, resolve, Tokens } from "@pixport/container";
 *
 * const scope = container.createChildContainer();
 * await registerPixport(scope, { storage: "fs", dataDir: "./data" });
 * scope.register(Tokens.BlobStore, { useValue: myS3Store });
 * const handler = resolve(scope, Tokens.HttpHandler);
 * // ...
 * await resolve(scope, Tokens.Lifecycle).close();
 * ```
 */
export async function registerPixport(
  container: DependencyContainer,
  config: PixportContainerConfig = {},
  options: RegisterPixportOptions = {},
): Promise<DependencyContainer> {
  const settings = parsePixportContainerConfig(config);
  provide(container, Tokens.Logger, () => silentLogger);
  const logger = resolve(container, Tokens.Logger);
  const owned = createOwnedResources();
  const lifecycle = createLifecycle(owned, () => resolve(container, Tokens.Logger));
  try {
    await registerStores(container, settings, owned, logger);
    await registerEngines(container, settings, owned, logger, options);
    await registerDelivery(container, settings, owned, options);
  } catch (error) {
    // What was built before the failure (a Redis connection, codec workers) is released.
    await lifecycle.close();
    throw error;
  }
  registerPolicyDefaults(container);
  registerComposition(container, owned);
  provide(container, Tokens.Lifecycle, () => lifecycle);
  return container;
}

/** Bytes, records and policy state. */
async function registerStores(
  container: DependencyContainer,
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  logger: Logger,
): Promise<void> {
  const storage = await createStorage(settings, owned);
  const state = await createState(settings, owned, logger);
  provide(container, Tokens.BlobStore, () => storage.blobs);
  provide(container, Tokens.PublicBlobStore, () => storage.publicBlobs);
  // The publisher copies from whichever private store the container finally holds.
  provide(container, Tokens.Publisher, () => storage.publisher(resolve(container, Tokens.BlobStore)));
  provide(container, Tokens.ImageRepository, state.images);
  provide(container, Tokens.KeyStore, () => state.keys);
  provide(container, Tokens.AccountStore, () => state.accounts);
  const { quota, locks, rateLimiter } = state;
  if (quota !== undefined) provide(container, Tokens.QuotaStore, () => quota);
  if (locks !== undefined) provide(container, Tokens.Locks, () => locks);
  if (rateLimiter !== undefined) provide(container, Tokens.RateLimiter, () => rateLimiter);
}

/**
 * The codec, the URL fetcher, the allocator's releaser, the model ports (with the embedded OCR),
 * the placeholder encoder and the background remover. Costly ones are built only when no
 * registration replaces them.
 */
async function registerEngines(
  container: DependencyContainer,
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  logger: Logger,
  options: RegisterPixportOptions,
): Promise<void> {
  if (!isProvided(container, Tokens.Codec)) {
    const created = await createCodec(settings);
    owned.engines.push(async () => (created as { close?(): Promise<void> }).close?.());
    const codec = options.instrumentCodec?.(created) ?? created;
    provide(container, Tokens.Codec, () => codec);
  }
  // URL import: own-storage URLs are read from the public store; others go through the SSRF-safe
  // fetcher (public addresses only, pinned connections, manual redirects).
  const { createNodeImageFetcher } = await import("@pixport/fetch-node");
  provide(container, Tokens.Fetcher, () => createNodeImageFetcher());
  // The allocator's free memory goes back to the system when the memory budget drains after a
  // large job (an upload or OCR page of megapixels): see `memoryBudget.releaseAfterBytes`.
  if (settings.releaseFreeMemory && !isProvided(container, Tokens.MemoryReleaser)) {
    const releaser = await createMemoryReleaser();
    provide(container, Tokens.MemoryReleaser, () => releaser);
  }
  if (!isProvided(container, Tokens.Models)) {
    const releaser: MemoryReleaser | undefined = isProvided(container, Tokens.MemoryReleaser)
      ? resolve(container, Tokens.MemoryReleaser)
      : undefined;
    const created = await createModels(settings, owned, logger, releaser);
    const models = options.instrumentModels?.(created) ?? created;
    provide(container, Tokens.Models, () => models);
  }
  // ThumbHash and BlurHash of every new image, for GET /v1/images/{id}/metadata.
  const { createThumbhashPlaceholders } = await import("@pixport/placeholders");
  provide(container, Tokens.Placeholders, () => createThumbhashPlaceholders());
  if (!isProvided(container, Tokens.BackgroundRemover)) {
    const remover = await createBackgroundRemover(settings, logger);
    if (remover !== undefined) {
      owned.engines.push(async () => remover.close?.());
      provide(container, Tokens.BackgroundRemover, () => remover);
    }
  }
}

/** The pipeline's and the HTTP handler's options, the test mark, the variant signer and the origins. */
async function registerDelivery(
  container: DependencyContainer,
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  options: RegisterPixportOptions,
): Promise<void> {
  const testWatermark =
    settings.testWatermarkFile === undefined
      ? undefined
      : await loadTestWatermark(resolve(container, Tokens.Codec), settings.testWatermarkFile);
  const pipelineOptions: ImagePipelineOptions = pipelineOptionsOf(settings, testWatermark);
  provide(container, Tokens.PipelineOptions, () => pipelineOptions);
  if (!isProvided(container, Tokens.VariantSigner)) {
    const signer = await createSigner(settings);
    provide(container, Tokens.VariantSigner, () => signer);
  }
  if (!isProvided(container, Tokens.OriginSources) && Object.keys(settings.delivery.origins).length > 0) {
    const sources = await createOriginSources(settings, owned);
    provide(container, Tokens.OriginSources, () => sources);
  }
  provide(container, Tokens.HttpOptions, () => httpOptionsOf(settings, options.onRequestDone));
}
