import {
  type BlobStore,
  createBlobStorePublisher,
  createCachingBlobStore,
  createMemoryBlobStore,
  type ImagePublisher,
} from "@pixport/core";
import { createFsBlobStore } from "@pixport/storage-fs";
import type { ResolvedPixportContainerConfig } from "../config.js";
import { pixportDataPaths } from "../data-paths.js";
import type { OwnedResources } from "../lifecycle.js";
import { importOptional } from "./optional-import.js";

/** Where bytes live: private blobs, published copies and how to publish from one to the other. */
export interface Storage {
  /** The private store, behind the blob cache when `blobCacheBytes` is above 0. */
  blobs: BlobStore;
  /** Where published copies live (served under `/images/`; read by URL import of own URLs). */
  publicBlobs: BlobStore;
  /** The publisher over whichever private store the container finally holds. */
  publisher(source: BlobStore): ImagePublisher;
}

/** Builds the configured storage (`memory`, `fs` or `s3`) and records what to sweep and close. */
export async function createStorage(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
): Promise<Storage> {
  const storage =
    settings.storage === "s3"
      ? await createS3Storage(settings, owned)
      : settings.storage === "fs"
        ? createFsStorage(settings.dataDir as string, settings.publicStorageBaseUrl, owned)
        : createMemoryStorage(settings.publicStorageBaseUrl);
  // Hot sources (one upload, many derived sizes) are read from the store twice, then from memory;
  // an image uploaded and read once (an OCR page) is never kept. Keys are write-once.
  const blobs =
    settings.blobCacheBytes > 0 && settings.storage !== "memory"
      ? createCachingBlobStore(storage.blobs, { maxBytes: settings.blobCacheBytes })
      : storage.blobs;
  return { ...storage, blobs };
}

function createMemoryStorage(publicBaseUrl: string): Storage {
  const publicBlobs = createMemoryBlobStore();
  return {
    blobs: createMemoryBlobStore(),
    publicBlobs,
    publisher: (source) => createBlobStorePublisher({ source, target: publicBlobs, publicBaseUrl }),
  };
}

function createFsStorage(dataDir: string, publicBaseUrl: string, owned: OwnedResources): Storage {
  const paths = pixportDataPaths(dataDir);
  const blobs = createFsBlobStore({ root: paths.blobs });
  const publicBlobs = createFsBlobStore({ root: paths.publicBlobs });
  // Temp files left by a crash are invisible to reads; they are removed once at start.
  owned.sweeps.push(
    () => blobs.sweepTemporaryFiles(),
    () => publicBlobs.sweepTemporaryFiles(),
  );
  return {
    blobs,
    publicBlobs,
    publisher: (source) => createBlobStorePublisher({ source, target: publicBlobs, publicBaseUrl }),
  };
}

/**
 * `storage: "s3"`: private blobs at `{prefix}{key}` in `bucket`, public copies at
 * `{publicPrefix}images/{id}.{ext}` in `publicBucket` (default: the same bucket). Publishing is a
 * server-side CopyObject. The SDK is imported only when S3 is chosen; the container owns the client.
 */
async function createS3Storage(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
): Promise<Storage> {
  const s3 = settings.s3 as NonNullable<ResolvedPixportContainerConfig["s3"]>;
  const [{ S3Client }, { createS3BlobStore, createS3Publisher }] = await Promise.all([
    importOptional(() => import("@aws-sdk/client-s3"), "@aws-sdk/client-s3", 'storage "s3"'),
    importOptional(() => import("@pixport/storage-s3"), "@pixport/storage-s3", 'storage "s3"'),
  ]);
  const client = new S3Client({
    region: s3.region ?? "us-east-1",
    ...(s3.endpoint === undefined ? {} : { endpoint: s3.endpoint }),
    forcePathStyle: s3.forcePathStyle,
    ...(s3.accessKeyId === undefined || s3.secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } }),
    requestChecksumCalculation: s3.checksums,
    responseChecksumValidation: s3.checksums,
  });
  owned.connections.push(async () => client.destroy());
  const source = { bucket: s3.bucket, prefix: s3.prefix };
  const target = { bucket: s3.publicBucket ?? s3.bucket, prefix: s3.publicPrefix };
  return {
    blobs: createS3BlobStore({ client, ...source }),
    publicBlobs: createS3BlobStore({ client, ...target }),
    // S3 copies server-side from the configured private bucket (S3 PUTs are atomic: no temp files).
    publisher: () =>
      createS3Publisher({ client, source, target, publicBaseUrl: settings.publicStorageBaseUrl }),
  };
}
