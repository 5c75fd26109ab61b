export { type AllocatorReleaser, createAllocatorReleaser } from "./create-allocator-releaser.js";
