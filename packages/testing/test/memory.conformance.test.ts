import {
  createBlobStorePublisher,
  createBlobVariantCache,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
} from "@pixport/core";
import { FILE_EXTENSIONS } from "@pixport/core/adapter-kit";
import {
  createMemoryOriginSource,
  describeBlobStoreConformance,
  describeImagePublisherConformance,
  describeImageRepositoryConformance,
  describeKeyStoreConformance,
  describeOriginSourceConformance,
  describeVariantCacheConformance,
} from "../src/index.js";

// The in-memory reference adapters pass every suite, which proves each suite can be passed. They
// declare no `peer`: memory is private to one instance, so the cross-process tests are skipped.
describeBlobStoreConformance({ name: "memory", create: () => createMemoryBlobStore() });
describeImageRepositoryConformance({ name: "memory", create: () => createMemoryImageRepository() });
describeKeyStoreConformance({ name: "memory", create: () => createMemoryKeyStore() });

// The blob-store publisher (core) over two memory stores.
describeImagePublisherConformance({
  name: "blob-store publisher over memory",
  create: async () => {
    const source = createMemoryBlobStore();
    const target = createMemoryBlobStore();
    const publicBaseUrl = "https://cdn.example.com/";
    return {
      source,
      publicBaseUrl,
      publisher: createBlobStorePublisher({ source, target, publicBaseUrl }),
      readPublic: (id, format) => target.get(`images/${id}.${FILE_EXTENSIONS[format]}`),
    };
  },
});

// The default variant cache over the in-memory store; the peer shares the store.
const variantStores = new WeakMap<object, ReturnType<typeof createMemoryBlobStore>>();
describeVariantCacheConformance({
  name: "blob-store variant cache on memory",
  create: async () => {
    const store = createMemoryBlobStore();
    const cache = createBlobVariantCache(store, { maxBytes: 1024 * 1024 });
    variantStores.set(cache, store);
    return cache;
  },
  peer: async (cache) => createBlobVariantCache(variantStores.get(cache)!, { maxBytes: 1024 * 1024 }),
});

// The memory origin of the binding suite keeps the port's rules too.
describeOriginSourceConformance({
  name: "memory",
  create: async () => {
    const source = createMemoryOriginSource();
    return { source, put: async (path, data) => source.put(path, data), close: async () => undefined };
  },
});
