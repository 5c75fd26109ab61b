import { createMemoryBlobStore, createMemoryImageRepository, createMemoryKeyStore } from "@pixport/core";
import {
  describeBlobStoreConformance,
  describeImageRepositoryConformance,
  describeKeyStoreConformance,
} from "../src/index.js";

// The in-memory reference adapters pass every suite, which proves each suite can be passed. They
// declare no `peer`: memory is private to one instance, so the cross-process tests are skipped.
describeBlobStoreConformance({ name: "memory", create: () => createMemoryBlobStore() });
describeImageRepositoryConformance({ name: "memory", create: () => createMemoryImageRepository() });
describeKeyStoreConformance({ name: "memory", create: () => createMemoryKeyStore() });
