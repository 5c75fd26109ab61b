export {
  createHttpOriginSource,
  type HttpOriginSourceOptions,
  httpOriginSourceOptionsSchema,
} from "./create-http-origin-source.js";
export {
  type AddressPolicy,
  createNodeImageFetcher,
  type HostResolver,
  type NodeImageFetcherOptions,
  nodeImageFetcherOptionsSchema,
  type ResolvedAddress,
} from "./create-node-image-fetcher.js";
export { blockedAddressReason, isPublicAddress, parseIpAddress } from "./ip-address.js";
