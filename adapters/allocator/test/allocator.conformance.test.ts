import { describeMemoryReleaserConformance } from "@pixport/testing";
import { createAllocatorReleaser } from "../src/index.js";

// This test process runs on glibc's malloc (vitest's forks are plain node); the tcmalloc cases,
// which need a preload, and the memory really going back are in allocator.test.ts.
describeMemoryReleaserConformance({
  name: "createAllocatorReleaser",
  create: createAllocatorReleaser,
  allocators: ["glibc"],
});

// As @pixport/ocr-tesseract creates it on tesseract.js: collecting before each release.
describeMemoryReleaserConformance({
  name: 'createAllocatorReleaser({ collectGarbage: "always" })',
  create: () => createAllocatorReleaser({ collectGarbage: "always" }),
  allocators: ["glibc"],
});
