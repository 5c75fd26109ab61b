export {
  type AllocatorReleaser,
  type AllocatorReleaserOptions,
  createAllocatorReleaser,
} from "./create-allocator-releaser.js";
