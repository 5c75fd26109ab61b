import type { BlobStore } from "./ports/blob-store.js";

/** Options of {@link createCachingBlobStore}. */
export interface CachingBlobStoreOptions {
  /**
   * Most bytes kept in memory. Blobs larger than a quarter of it are never cached.
   * @default 64 MiB
   */
  maxBytes?: number;
}

/**
 * Wraps a BlobStore with an in-process LRU cache of blob bytes, so a hot source image (one upload,
 * many derived sizes) is read from the backend once.
 *
 * Only correct for write-once keys: pixport's own keys are (every image has a new random id and its
 * key is never rewritten with other bytes), so another process can only delete a key, never change
 * it, and a deleted image is refused by its missing record before its bytes are read. Do not wrap a
 * store whose keys are overwritten with new content by other processes.
 *
 * `put` and `delete` go to the backend first and then update the cache. To keep hot reads free of
 * copies, the bytes given to `put` and returned by `get` are shared with the cache: treat them as
 * read-only (pixport's operations and codecs never write into image bytes).
 *
 * @example
 * ```ts
 * const blobStore = createCachingBlobStore(createS3BlobStore({ client, bucket }), { maxBytes: 64 * 1024 * 1024 });
 * ```
 */
export function createCachingBlobStore(store: BlobStore, options: CachingBlobStoreOptions = {}): BlobStore {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const maxEntryBytes = Math.floor(maxBytes / 4);
  const entries = new Map<string, Uint8Array>();
  let bytes = 0;

  const remember = (key: string, data: Uint8Array) => {
    forget(key);
    if (data.byteLength > maxEntryBytes) return;
    entries.set(key, data);
    bytes += data.byteLength;
    for (const [oldest, value] of entries) {
      if (bytes <= maxBytes) break;
      entries.delete(oldest);
      bytes -= value.byteLength;
    }
  };
  const forget = (key: string) => {
    const existing = entries.get(key);
    if (existing === undefined) return;
    entries.delete(key);
    bytes -= existing.byteLength;
  };

  return {
    async put(key, data, metadata, options) {
      await store.put(key, data, metadata, options);
      remember(key, data);
    },
    async get(key) {
      const cached = entries.get(key);
      if (cached !== undefined) {
        // Refresh the key's position: Map iteration order is insertion order.
        entries.delete(key);
        entries.set(key, cached);
        return cached;
      }
      const data = await store.get(key);
      if (data !== null) remember(key, data);
      return data;
    },
    stat: (key) => store.stat(key),
    async delete(key) {
      forget(key);
      await store.delete(key);
      forget(key);
    },
    ...(store.list === undefined ? {} : { list: (prefix: string) => store.list!(prefix) }),
  };
}
