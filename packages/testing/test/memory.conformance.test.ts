import {
  createBlobStorePublisher,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  FILE_EXTENSIONS,
} from "@pixport/core";
import {
  describeBlobStoreConformance,
  describeImagePublisherConformance,
  describeImageRepositoryConformance,
  describeKeyStoreConformance,
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
