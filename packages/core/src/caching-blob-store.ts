import { NOT_KEPT, SourceCache } from "./kept-sources.js";
import type { BlobStore } from "./ports/blob-store.js";

/** Options of {@link createCachingBlobStore}. */
export interface CachingBlobStoreOptions {
  /**
   * Most bytes kept in memory. Blobs larger than a quarter of it are never cached.
   * @default 64 MiB
   */
  maxBytes?: number;
  /**
   * How many keys read lately are remembered (their names and sizes) for the admission rule; also
   * the most blobs kept.
   * @default 1024
   */
  recentKeys?: number;
}

/**
 * Wraps a BlobStore with an in-process LRU cache of blob bytes, so a hot source image (one upload,
 * many derived sizes) is not read from the backend on every request.
 *
 * A blob is kept from its second read among the last `recentKeys` keys read, when the blobs read
 * since its first read fit beside it: the rule, and the cache ({@link SourceCache}), of the codecs'
 * decoded sources (blobs that rotate through more bytes than the cache holds are not kept). Writes, single reads and background
 * reads (`get`'s `background` option: the deferred image facts) pass through, so a stream of
 * images that are each uploaded and read once (OCR pages, one-off conversions) does not fill the
 * cache with bytes nobody reads again; a hot source is read from the backend twice. Keeping every
 * `put` and every read cost the server reading the OCR suite about 8 MB of its peak (BENCHMARKS.md,
 * "OCR").
 *
 * Only correct for write-once keys: pixport's own keys are (every image has a new random id and its
 * key is never rewritten with other bytes), so another process can only delete a key, never change
 * it, and a deleted image is refused by its missing record before its bytes are read. Do not wrap a
 * store whose keys are overwritten with new content by other processes.
 *
 * `put` and `delete` go to the backend first and then drop the key from the cache. To keep hot
 * reads free of copies, the bytes returned by `get` are shared with the cache: treat them as
 * read-only (pixport's operations and codecs never write into image bytes).
 *
 * @example
 * ```ts
 * const blobStore = createCachingBlobStore(createS3BlobStore({ client, bucket }), { maxBytes: 64 * 1024 * 1024 });
 * ```
 */
export function createCachingBlobStore(store: BlobStore, options: CachingBlobStoreOptions = {}): BlobStore {
  const kept = new SourceCache<{ data: Uint8Array }>(
    options.maxBytes ?? 64 * 1024 * 1024,
    options.recentKeys ?? 1024,
  );
  return {
    async put(key, data, metadata, options) {
      await store.put(key, data, metadata, options);
      kept.forget(key);
    },
    async get(key, options) {
      // A background job's read (the deferred image facts) is not a use: it neither keeps the
      // blob nor refreshes its place.
      if (options?.background === true) return kept.peek(key)?.data ?? store.get(key, options);
      // The second read among the recent keys reads the backend through the cache; the first
      // (null) reads it directly, as does a read of a missing key.
      const cached = await kept.get(key, async () => {
        const data = await store.get(key);
        return data === null ? NOT_KEPT : { data };
      });
      if (cached !== null) return cached.data;
      const data = await store.get(key);
      // Its size, for the admission rule at the key's next read.
      if (data !== null) kept.sized(key, data.byteLength);
      return data;
    },
    stat: (key) => store.stat(key),
    async delete(key) {
      kept.forget(key);
      await store.delete(key);
      kept.forget(key);
    },
    ...(store.list === undefined ? {} : { list: (prefix: string) => store.list!(prefix) }),
  };
}
