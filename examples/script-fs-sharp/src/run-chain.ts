import path from "node:path";
import { createSharpCodec } from "@pixport/codec-sharp";
import { type Caller, createBlobStorePublisher, createImagePipeline, type Image } from "@pixport/core";
import { createFsBlobStore, createFsImageRepository, createFsKeyStore } from "@pixport/storage-fs";

/** What {@link runChain} produced. */
export interface ChainResult {
  /** Every image the chain created, in order: the upload, then one per operation. */
  images: Image[];
  /** The final image's bytes (webp). */
  output: Uint8Array;
  /** Public URL of the final image. */
  publicUrl: string | null;
}

/**
 * Runs a chain of operations on one image with plain constructors (no HTTP, no DI container):
 * upload → resize to 320 px wide → rotate 90° → blur → convert to webp → publish → download.
 * Data lives under `dataDir` (private blobs, public copies, image records, keys).
 */
export async function runChain(options: {
  dataDir: string;
  input: Uint8Array;
  name?: string;
}): Promise<ChainResult> {
  const blobStore = createFsBlobStore({ root: path.join(options.dataDir, "blobs") });
  const pipeline = createImagePipeline({
    codec: createSharpCodec(),
    blobStore,
    images: createFsImageRepository({ root: path.join(options.dataDir, "images") }),
    // Library callers pass a Caller directly; keys only matter to HTTP callers.
    keys: createFsKeyStore({ root: path.join(options.dataDir, "keys") }),
    publisher: createBlobStorePublisher({
      source: blobStore,
      target: createFsBlobStore({ root: path.join(options.dataDir, "public") }),
      publicBaseUrl: "https://cdn.example.com",
    }),
  });
  // A live caller: the test-key watermark does not apply to library use.
  const caller: Caller = { accountId: "local", keyKind: "live", keyId: "script" };

  const uploaded = await pipeline.uploadImage(caller, {
    name: options.name ?? "input",
    image: options.input,
  });
  const resized = await pipeline.resizeImage(caller, { imageId: uploaded.id, body: { width: 320 } });
  const rotated = await pipeline.rotateImage(caller, { imageId: resized.id, body: { angle: 90 } });
  const blurred = await pipeline.blurImage(caller, { imageId: rotated.id, body: { sigma: 2 } });
  const converted = await pipeline.convertImage(caller, {
    imageId: blurred.id,
    body: { format: "webp", quality: 80, name: "thumbnail" },
  });
  const published = await pipeline.publishImage(caller, { imageId: converted.id });
  const downloaded = await pipeline.downloadImage(caller, { imageId: converted.id });
  return {
    images: [uploaded, resized, rotated, blurred, converted],
    output: downloaded.data,
    publicUrl: published.url,
  };
}
