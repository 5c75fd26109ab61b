export type { FsPromises, SweepTemporaryFilesOptions } from "./atomic-write.js";
export {
  createFsAccountStore,
  type FsAccountStoreOptions,
  fsAccountStoreOptionsSchema,
} from "./create-fs-account-store.js";
export {
  createFsBlobStore,
  type FsBlobStore,
  type FsBlobStoreOptions,
  fsBlobStoreOptionsSchema,
} from "./create-fs-blob-store.js";
export {
  createFsImageRepository,
  type FsImageRepository,
  type FsImageRepositoryOptions,
  fsImageRepositoryOptionsSchema,
} from "./create-fs-image-repository.js";
export {
  createFsKeyStore,
  type FsKeyStore,
  type FsKeyStoreOptions,
  fsKeyStoreOptionsSchema,
} from "./create-fs-key-store.js";
export {
  createFsOriginSource,
  type FsOriginSourceOptions,
  fsOriginSourceOptionsSchema,
} from "./create-fs-origin-source.js";
export {
  createFsQuotaStore,
  type FsQuotaStore,
  type FsQuotaStoreOptions,
  fsQuotaStoreOptionsSchema,
} from "./create-fs-quota-store.js";
