import { formatFromSpelling, MIME_TYPES, sniffImageFormat } from "../image.js";
import { LruMap } from "../lru.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { VariantCache } from "../ports/variant-cache.js";

/**
 * A {@link VariantCache} on a BlobStore (the private store: files under the data directory, or S3),
 * under `{prefix}/{image_id}/{key}` (prefix `variants` unless given; the original cache of origin
 * images uses `originals`). Bounded by `maxBytes` on this node: variants this process
 * wrote or read are tracked least recently used first and the oldest are deleted past the bound
 * (variants from an earlier run count once read). A variant larger than `maxEntryBytes` (default:
 * an eighth of `maxBytes`) is served but never kept, so no one variant can push most others out.
 * Removing an image's variants needs a store that can list keys (fs, S3 and memory can).
 *
 * @example
 * ```ts
 * const variantCache = createBlobVariantCache(blobStore, { maxBytes: 256 * 1024 * 1024 });
 * const pipeline = createImagePipeline({ ...deps, variantCache });
 * ```
 */
export function createBlobVariantCache(
  store: BlobStore,
  options: { maxBytes: number; memoryBytes?: number; maxEntryBytes?: number; prefix?: string },
): VariantCache & { readonly bytes: number } {
  const maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 8);
  // Hot variants also stay in memory (least recently used out first), so a hit reads no disk.
  const hot = createHotVariants(options.memoryBytes ?? 64 * 1024 * 1024);
  const ledger = createStoreLedger(store, options.maxBytes, (name) => hot.drop(name));
  const root = options.prefix ?? "variants";
  const blobKey = (imageId: string, key: string) => `${root}/${imageId.toLowerCase()}/${key}`;
  return {
    get bytes() {
      return ledger.bytes();
    },
    async get(imageId, key) {
      const name = blobKey(imageId, key);
      const memory = hot.get(name);
      if (memory !== undefined) {
        hot.keep(name, memory);
        return { data: memory, contentType: contentTypeOf(name, memory) };
      }
      const data = await store.get(name);
      if (data === null) {
        ledger.forget(name);
        return null;
      }
      await ledger.touch(name, data.byteLength);
      hot.keep(name, data);
      return { data, contentType: contentTypeOf(name, data) };
    },
    async put(imageId, key, variant) {
      const name = blobKey(imageId, key);
      // No one variant may push out a large share of everyone else's: two variants of a 50 MP
      // image could otherwise empty the whole cache. It is served, just not kept.
      if (variant.data.byteLength > maxEntryBytes) return;
      // A key without a format's extension (`auto`, whose format is known only once made) is
      // stored as bytes: reads sniff the type, and the store keeps no metadata beside it.
      const contentType =
        formatFromSpelling(key.slice(key.lastIndexOf(".") + 1)) === null
          ? "application/octet-stream"
          : variant.contentType;
      // A cache: all-or-nothing is needed, durability is not (a lost variant is made again).
      await store.put(name, variant.data, { contentType }, { durable: false });
      await ledger.touch(name, variant.data.byteLength);
      hot.keep(name, variant.data);
    },
    async removeImage(imageId) {
      const prefix = `${root}/${imageId.toLowerCase()}/`;
      ledger.forgetPrefix(prefix);
      hot.dropPrefix(prefix);
      if (store.list === undefined) return;
      for await (const entry of store.list(prefix)) await store.delete(entry.key);
    },
  };
}

/** Variants kept in memory up to `memoryBytes`, least recently used out first; none over a quarter of it. */
function createHotVariants(memoryBytes: number) {
  const hot = new LruMap<string, Uint8Array>({ maxBytes: memoryBytes, sizeOf: (data) => data.byteLength });
  return {
    get: (name: string) => hot.get(name),
    drop: (name: string) => hot.delete(name),
    dropPrefix(prefix: string) {
      for (const name of [...hot.keys()]) if (name.startsWith(prefix)) hot.delete(name);
    },
    keep(name: string, data: Uint8Array) {
      if (data.byteLength > memoryBytes / 4) hot.delete(name);
      else hot.set(name, data);
    },
  };
}

/**
 * The variants this node wrote or read on the store, least recently used first, with their sizes:
 * past `maxBytes`, the oldest are deleted from the store (and `evicted` is told).
 */
function createStoreLedger(store: BlobStore, maxBytes: number, evicted: (name: string) => void) {
  let deletions: Promise<void>[] = [];
  const entries = new LruMap<string, number>({
    maxBytes,
    sizeOf: (size) => size,
    onEvict(name) {
      evicted(name);
      deletions.push(store.delete(name).catch(() => undefined));
    },
  });
  return {
    bytes: () => entries.bytes,
    forget: (name: string) => entries.delete(name),
    forgetPrefix(prefix: string) {
      for (const name of [...entries.keys()]) if (name.startsWith(prefix)) entries.delete(name);
    },
    async touch(name: string, size: number) {
      entries.set(name, size);
      if (deletions.length === 0) return;
      const pending = deletions;
      deletions = [];
      await Promise.all(pending);
    },
  };
}

/**
 * The content type of a cached variant: from its bytes (a variant may be the original, in another
 * format than its key's extension), else from its key's extension.
 */
function contentTypeOf(name: string, data: Uint8Array): string {
  const sniffed = sniffImageFormat(data);
  if (sniffed !== null) return MIME_TYPES[sniffed];
  const extension = name.slice(name.lastIndexOf(".") + 1);
  const format = formatFromSpelling(extension);
  return format === null ? "application/octet-stream" : MIME_TYPES[format];
}
