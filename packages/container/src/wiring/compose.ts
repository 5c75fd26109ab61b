import {
  createImagePipeline,
  createMemoryLockService,
  createMemoryQuotaStore,
  createMemoryRateLimiter,
  type ImagePipelineDeps,
  systemClock,
} from "@pixport/core";
import { createRandomIdGenerator } from "@pixport/core/internal";
import { createHttpHandler } from "@pixport/http";
import type { DependencyContainer } from "tsyringe";
import type { OwnedResources } from "../lifecycle.js";
import { provide, resolve } from "../resolve.js";
import { type Token, Tokens } from "../tokens.js";

/** Whatever is still missing (clock, ids, quota, locks, the rate limiter) lives in this process. */
export function registerPolicyDefaults(container: DependencyContainer): void {
  provide(container, Tokens.Clock, () => systemClock);
  provide(container, Tokens.IdGenerator, () => createRandomIdGenerator());
  provide(container, Tokens.QuotaStore, () => createMemoryQuotaStore());
  provide(container, Tokens.Locks, () => createMemoryLockService());
  provide(container, Tokens.RateLimiter, () =>
    createMemoryRateLimiter({ clock: resolve(container, Tokens.Clock) }),
  );
}

/** The value under `token`, or `undefined` when nothing is registered (optional ports). */
function optional<T>(container: DependencyContainer, token: Token<T>): T | undefined {
  return container.isRegistered(token, true) ? container.resolve<T>(token) : undefined;
}

/**
 * The pipeline, composed from whatever the tokens hold when it is first resolved, and the HTTP
 * handler over it.
 */
export function registerComposition(container: DependencyContainer, owned: OwnedResources): void {
  provide(container, Tokens.Pipeline, () => {
    const pipeline = createImagePipeline(pipelineDeps(container), resolve(container, Tokens.PipelineOptions));
    owned.pipeline = pipeline;
    return pipeline;
  });
  provide(container, Tokens.HttpHandler, () =>
    createHttpHandler(resolve(container, Tokens.Pipeline), {
      logger: resolve(container, Tokens.Logger),
      ...resolve(container, Tokens.HttpOptions),
    }),
  );
}

function pipelineDeps(container: DependencyContainer): ImagePipelineDeps {
  const optionalDeps = {
    fetcher: optional(container, Tokens.Fetcher),
    models: optional(container, Tokens.Models),
    backgroundRemover: optional(container, Tokens.BackgroundRemover),
    placeholders: optional(container, Tokens.Placeholders),
    variantSigner: optional(container, Tokens.VariantSigner),
    variantCache: optional(container, Tokens.VariantCache),
    origins: optional(container, Tokens.OriginSources),
    memoryReleaser: optional(container, Tokens.MemoryReleaser),
  };
  return {
    codec: resolve(container, Tokens.Codec),
    blobStore: resolve(container, Tokens.BlobStore),
    images: resolve(container, Tokens.ImageRepository),
    keys: resolve(container, Tokens.KeyStore),
    publisher: resolve(container, Tokens.Publisher),
    clock: resolve(container, Tokens.Clock),
    ids: resolve(container, Tokens.IdGenerator),
    logger: resolve(container, Tokens.Logger),
    publicBlobStore: resolve(container, Tokens.PublicBlobStore),
    rateLimiter: resolve(container, Tokens.RateLimiter),
    quota: resolve(container, Tokens.QuotaStore),
    accounts: resolve(container, Tokens.AccountStore),
    locks: resolve(container, Tokens.Locks),
    // An absent optional port is left out of the deps rather than set to undefined.
    ...Object.fromEntries(Object.entries(optionalDeps).filter(([, value]) => value !== undefined)),
  };
}
