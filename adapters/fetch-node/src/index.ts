export {
  type AddressPolicy,
  createNodeImageFetcher,
  type HostResolver,
  type NodeImageFetcherOptions,
  nodeImageFetcherOptionsSchema,
  type ResolvedAddress,
} from "./create-node-image-fetcher.js";
export { blockedAddressReason, isPublicAddress, parseIpAddress } from "./ip-address.js";
