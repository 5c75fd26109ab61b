import { assertBlobKey, type BlobInfo, type BlobMetadata, type BlobStore } from "../ports/blob-store.js";

/**
 * A BlobStore in process memory: the reference adapter of the BlobStore conformance suite, and
 * handy for tests and short-lived library use. Values are copied in and out, so callers cannot
 * mutate stored bytes.
 *
 * @example
 * ```ts
 * const blobStore = createMemoryBlobStore();
 * await blobStore.put("images/a.png", bytes, { contentType: "image/png" });
 * ```
 */
export function createMemoryBlobStore(): BlobStore {
  const blobs = new Map<string, { data: Uint8Array; metadata: BlobMetadata; modifiedAt: Date }>();
  return {
    async put(key, data, metadata) {
      assertBlobKey(key);
      blobs.set(key, { data: new Uint8Array(data), metadata: { ...metadata }, modifiedAt: new Date() });
    },
    async get(key) {
      assertBlobKey(key);
      const blob = blobs.get(key);
      return blob === undefined ? null : new Uint8Array(blob.data);
    },
    async stat(key): Promise<BlobInfo | null> {
      assertBlobKey(key);
      const blob = blobs.get(key);
      return blob === undefined ? null : { size: blob.data.byteLength, ...blob.metadata };
    },
    async delete(key) {
      assertBlobKey(key);
      blobs.delete(key);
    },
    async *list(prefix) {
      for (const [key, blob] of [...blobs.entries()]) {
        if (key.startsWith(prefix)) yield { key, modifiedAt: blob.modifiedAt };
      }
    },
  };
}
