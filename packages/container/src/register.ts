import {
  type BlobStore,
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryAccountStore,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  createMemoryLockService,
  createMemoryQuotaStore,
  createMemoryRateLimiter,
  createRandomIdGenerator,
  type ImageCodec,
  type ImagePipelineDeps,
  parseOptions,
  silentLogger,
  systemClock,
} from "@pixport/core";
import { createHttpHandler } from "@pixport/http";
import {
  createFsAccountStore,
  createFsBlobStore,
  createFsImageRepository,
  createFsKeyStore,
} from "@pixport/storage-fs";
import type { DependencyContainer } from "tsyringe";
import { instanceCachingFactory } from "tsyringe";
import { z } from "zod";
import { type Token, Tokens } from "./tokens.js";

/** What {@link registerPixport} registers by default. Every adapter can still be replaced. */
export const pixportContainerConfigSchema = z.object({
  /**
   * The default codec: `sharp` (`@pixport/codec-sharp`) or `jimp` (`@pixport/codec-jimp`, pure
   * JavaScript). Only the chosen package is imported. Ignored when `Tokens.Codec` is registered.
   * @default "sharp"
   */
  codec: z.enum(["sharp", "jimp"]).default("sharp"),
  /**
   * Where images, records, keys and account flags live: `memory` (this process, lost on exit) or
   * `fs` (files under `dataDir`, the prebuilt server's layout). Rate-limit and quota counters stay
   * in memory unless `Tokens.RateLimiter` / `Tokens.QuotaStore` are registered (e.g. Redis).
   * @default { type: "memory" }
   */
  storage: z
    .discriminatedUnion("type", [
      z.object({ type: z.literal("memory") }),
      z.object({ type: z.literal("fs"), dataDir: z.string().min(1) }),
    ])
    .default({ type: "memory" }),
  /**
   * Base URL that published copies are served under (`{publicStorageBaseUrl}/images/{id}.{ext}`).
   * @default "http://localhost:3000"
   */
  publicStorageBaseUrl: z.url({ protocol: /^https?$/ }).default("http://localhost:3000"),
});

export type PixportContainerConfig = z.input<typeof pixportContainerConfigSchema>;

/** The file layout of `storage: fs` (the prebuilt server's data directory). */
export function pixportDataPaths(dataDir: string) {
  const join = (name: string) => `${dataDir.replace(/[\\/]+$/, "")}/${name}`;
  return {
    blobs: join("blobs"),
    publicBlobs: join("public"),
    images: join("images"),
    keys: join("keys"),
    accounts: join("accounts"),
  };
}

/** Typed `container.resolve`: `resolve(container, Tokens.Pipeline)` is an `ImagePipeline`. */
export function resolve<T>(container: DependencyContainer, token: Token<T>): T {
  return container.resolve<T>(token);
}

/**
 * Registers `make` as the singleton factory of `token` unless the container (or a parent) already
 * holds a registration for it: the way a composition root offers a default that callers may have
 * replaced already. Returns whether it registered.
 *
 * @example
 * ```ts
 * provide(scope, Tokens.Logger, () => myLogger); // kept if the caller registered a Logger
 * ```
 */
export function provide<T>(container: DependencyContainer, token: Token<T>, make: () => T): boolean {
  if (container.isRegistered(token, true)) return false;
  container.register<T>(token, { useFactory: instanceCachingFactory<T>(() => make()) });
  return true;
}

/** The value under `token`, or `undefined` when nothing is registered (optional ports). */
function optional<T>(container: DependencyContainer, token: Token<T>): T | undefined {
  return container.isRegistered(token, true) ? container.resolve<T>(token) : undefined;
}

/**
 * Registers pixport's defaults in a tsyringe container: one singleton factory per port (see
 * {@link Tokens}), the pipeline composed from whatever is registered under those tokens when it is
 * resolved, and the HTTP handler over it. Nothing is built before the first `resolve`.
 *
 * Replace any adapter with `container.register(Tokens.X, { useValue })` (or a factory) before the
 * pipeline is first resolved. Both orders work: registrations made after this call win (tsyringe
 * resolves the last registration), and a token registered before it is left as it is.
 *
 * No decorators and no reflect-metadata lookups: tokens and factories only, so it works with
 * esbuild, tsup and vitest, which emit no decorator metadata.
 *
 * @example
 * ```ts
 * import { container } from "tsyringe";
 * import { registerPixport, resolve, Tokens } from "@pixport/container";
 *
 * await registerPixport(container, { storage: { type: "fs", dataDir: "./data" } });
 * container.register(Tokens.BlobStore, { useValue: myS3Store });
 * const pipeline = resolve(container, Tokens.Pipeline);
 * const handler = resolve(container, Tokens.HttpHandler);
 * ```
 */
export async function registerPixport(
  container: DependencyContainer,
  config: PixportContainerConfig = {},
): Promise<DependencyContainer> {
  const settings = parseOptions(pixportContainerConfigSchema, config, "pixport container");
  const singleton = <T>(token: Token<T>, make: (c: DependencyContainer) => T) => {
    if (container.isRegistered(token, false)) return;
    container.register<T>(token, { useFactory: instanceCachingFactory<T>(make) });
  };

  if (!container.isRegistered(Tokens.Codec, false)) {
    const codec = await loadCodec(settings.codec);
    singleton(Tokens.Codec, () => codec);
  }

  const storage = settings.storage;
  if (storage.type === "fs") {
    const paths = pixportDataPaths(storage.dataDir);
    singleton(Tokens.BlobStore, () => createFsBlobStore({ root: paths.blobs }));
    singleton(Tokens.PublicBlobStore, () => createFsBlobStore({ root: paths.publicBlobs }));
    singleton(Tokens.ImageRepository, () => createFsImageRepository({ root: paths.images }));
    singleton(Tokens.KeyStore, () => createFsKeyStore({ root: paths.keys }));
    singleton(Tokens.AccountStore, () => createFsAccountStore({ root: paths.accounts }));
  } else {
    singleton(Tokens.BlobStore, () => createMemoryBlobStore());
    singleton(Tokens.PublicBlobStore, () => createMemoryBlobStore());
    singleton(Tokens.ImageRepository, () => createMemoryImageRepository());
    singleton(Tokens.KeyStore, () => createMemoryKeyStore());
    singleton(Tokens.AccountStore, () => createMemoryAccountStore());
  }
  singleton(Tokens.Clock, () => systemClock);
  singleton(Tokens.Logger, () => silentLogger);
  singleton(Tokens.IdGenerator, () => createRandomIdGenerator());
  singleton(Tokens.QuotaStore, () => createMemoryQuotaStore());
  singleton(Tokens.Locks, () => createMemoryLockService());
  singleton(Tokens.RateLimiter, (c) => createMemoryRateLimiter({ clock: c.resolve(Tokens.Clock) }));
  singleton(Tokens.Publisher, (c) =>
    createBlobStorePublisher({
      source: c.resolve<BlobStore>(Tokens.BlobStore),
      target: c.resolve<BlobStore>(Tokens.PublicBlobStore),
      publicBaseUrl: settings.publicStorageBaseUrl,
    }),
  );
  singleton(Tokens.PipelineOptions, () => ({}));
  singleton(Tokens.HttpOptions, () => ({}));
  singleton(Tokens.Pipeline, (c) => {
    const deps: ImagePipelineDeps = {
      codec: resolve(c, Tokens.Codec),
      blobStore: resolve(c, Tokens.BlobStore),
      images: resolve(c, Tokens.ImageRepository),
      keys: resolve(c, Tokens.KeyStore),
      publisher: resolve(c, Tokens.Publisher),
      clock: resolve(c, Tokens.Clock),
      ids: resolve(c, Tokens.IdGenerator),
      logger: resolve(c, Tokens.Logger),
      publicBlobStore: resolve(c, Tokens.PublicBlobStore),
      rateLimiter: resolve(c, Tokens.RateLimiter),
      quota: resolve(c, Tokens.QuotaStore),
      accounts: resolve(c, Tokens.AccountStore),
      locks: resolve(c, Tokens.Locks),
    };
    const fetcher = optional(c, Tokens.Fetcher);
    const models = optional(c, Tokens.Models);
    const backgroundRemover = optional(c, Tokens.BackgroundRemover);
    const placeholders = optional(c, Tokens.Placeholders);
    const variantSigner = optional(c, Tokens.VariantSigner);
    const variantCache = optional(c, Tokens.VariantCache);
    const memoryReleaser = optional(c, Tokens.MemoryReleaser);
    return createImagePipeline(
      {
        ...deps,
        ...(placeholders === undefined ? {} : { placeholders }),
        ...(variantSigner === undefined ? {} : { variantSigner }),
        ...(variantCache === undefined ? {} : { variantCache }),
        ...(fetcher === undefined ? {} : { fetcher }),
        ...(models === undefined ? {} : { models }),
        ...(backgroundRemover === undefined ? {} : { backgroundRemover }),
        ...(memoryReleaser === undefined ? {} : { memoryReleaser }),
      },
      resolve(c, Tokens.PipelineOptions),
    );
  });
  singleton(Tokens.HttpHandler, (c) =>
    createHttpHandler(resolve(c, Tokens.Pipeline), {
      logger: resolve(c, Tokens.Logger),
      ...resolve(c, Tokens.HttpOptions),
    }),
  );
  return container;
}

/** Imports only the chosen codec package, so `jimp` works where sharp's binaries cannot load. */
async function loadCodec(name: "sharp" | "jimp"): Promise<ImageCodec> {
  if (name === "jimp") {
    const { createJimpCodec } = await import("@pixport/codec-jimp");
    return createJimpCodec();
  }
  const { createSharpCodec } = await import("@pixport/codec-sharp");
  return createSharpCodec();
}
