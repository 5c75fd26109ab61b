export {
  type AllocatorReleaser,
  type AllocatorReleaserOptions,
  createAllocatorReleaser,
} from "./create-allocator-releaser.js";
export { limitMallocArenas } from "./limit-malloc-arenas.js";
