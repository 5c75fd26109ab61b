import {
  type BlobStore,
  createBlobStorePublisher,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  type ImageCodec,
  type ImagePipelineDeps,
} from "../src/index.js";

/**
 * The dependencies of a pipeline on the memory adapters, for the core's own tests: `codec`, a
 * blob store, an image repository, a key store and a publisher copying to `publicStore` (a fresh
 * memory store unless given) under `https://cdn.test`. `extra` adds or replaces dependencies.
 */
export function memoryDeps(
  codec: ImageCodec,
  extra: Partial<ImagePipelineDeps> = {},
  publicStore: BlobStore = createMemoryBlobStore(),
): ImagePipelineDeps & { blobStore: BlobStore } {
  const blobStore = createMemoryBlobStore();
  return {
    codec,
    blobStore,
    images: createMemoryImageRepository(),
    keys: createMemoryKeyStore(),
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: publicStore,
      publicBaseUrl: "https://cdn.test",
    }),
    ...extra,
  };
}
