import type { BlobStore } from "./ports/blob-store.js";

/** Options of {@link createCachingBlobStore}. */
export interface CachingBlobStoreOptions {
  /**
   * Most bytes kept in memory. Blobs larger than a quarter of it are never cached.
   * @default 64 MiB
   */
  maxBytes?: number;
  /**
   * Keep a blob from its first read (and from `put`) instead of from its second read among the
   * last `recentKeys` keys read. The default keeps only blobs read twice, so an image that is
   * uploaded and read once (an OCR page, a one-off conversion) costs no memory; a hot source is read
   * from the backend twice instead of once.
   * @default false
   */
  keepOnFirstRead?: boolean;
  /**
   * How many keys read once are remembered (their names, not their bytes) for the second-read rule.
   * @default 1024
   */
  recentKeys?: number;
}

/**
 * Wraps a BlobStore with an in-process LRU cache of blob bytes, so a hot source image (one upload,
 * many derived sizes) is not read from the backend on every request.
 *
 * A blob is kept from its second read among the last `recentKeys` keys read (the rule of the
 * codecs' decoded-source cache): writes, single reads and background reads (`get`'s
 * `background` option: the deferred image facts) pass through, so a stream of images that are each
 * uploaded and read once (OCR pages, one-off conversions) does not fill the cache with bytes nobody
 * reads again. Reading the OCR suite through the server, keeping every upload cost
 * about 8 MB of its peak (BENCHMARKS.md, "OCR", fifteenth session). `keepOnFirstRead` restores
 * the older rule (every read and every `put` kept).
 *
 * Only correct for write-once keys: pixport's own keys are (every image has a new random id and its
 * key is never rewritten with other bytes), so another process can only delete a key, never change
 * it, and a deleted image is refused by its missing record before its bytes are read. Do not wrap a
 * store whose keys are overwritten with new content by other processes.
 *
 * `put` and `delete` go to the backend first and then update the cache. To keep hot reads free of
 * copies, the bytes given to `put` (when `keepOnFirstRead`) and returned by `get` are shared with
 * the cache: treat them as read-only (pixport's operations and codecs never write into image bytes).
 *
 * @example
 * ```ts
 * const blobStore = createCachingBlobStore(createS3BlobStore({ client, bucket }), { maxBytes: 64 * 1024 * 1024 });
 * ```
 */
export function createCachingBlobStore(store: BlobStore, options: CachingBlobStoreOptions = {}): BlobStore {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const maxEntryBytes = Math.floor(maxBytes / 4);
  const keepOnFirstRead = options.keepOnFirstRead ?? false;
  const recentKeys = options.recentKeys ?? 1024;
  const entries = new Map<string, Uint8Array>();
  // Keys read once recently, oldest first (names only): a second read keeps the blob.
  const seen = new Set<string>();
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
  /** Whether this read of `key` should keep its bytes (the second among the recent keys). */
  const admits = (key: string) => {
    if (keepOnFirstRead || seen.delete(key)) return true;
    seen.add(key);
    if (seen.size > recentKeys) seen.delete(seen.values().next().value as string);
    return false;
  };
  const forget = (key: string) => {
    seen.delete(key);
    const existing = entries.get(key);
    if (existing === undefined) return;
    entries.delete(key);
    bytes -= existing.byteLength;
  };

  return {
    async put(key, data, metadata, options) {
      await store.put(key, data, metadata, options);
      if (keepOnFirstRead) remember(key, data);
      else forget(key);
    },
    async get(key, options) {
      const cached = entries.get(key);
      // A background job's read (the deferred image facts) is not a use: it neither keeps the
      // blob nor refreshes its place.
      if (options?.background === true) return cached ?? store.get(key, options);
      if (cached !== undefined) {
        // Refresh the key's position: Map iteration order is insertion order.
        entries.delete(key);
        entries.set(key, cached);
        return cached;
      }
      const data = await store.get(key);
      if (data !== null && admits(key)) remember(key, data);
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
