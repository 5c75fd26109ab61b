import { formatFromSpelling, MIME_TYPES, sniffImageFormat } from "../image.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { VariantCache } from "../ports/variant-cache.js";

/**
 * A {@link VariantCache} on a BlobStore (the private store: files under the data directory, or S3),
 * under `variants/{image_id}/{key}`. Bounded by `maxBytes` on this node: variants this process
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
  options: { maxBytes: number; memoryBytes?: number; maxEntryBytes?: number },
): VariantCache & { readonly bytes: number } {
  const maxEntryBytes = options.maxEntryBytes ?? Math.floor(options.maxBytes / 8);
  // Hot variants also stay in memory (least recently used out first), so a hit reads no disk.
  const hot = createHotVariants(options.memoryBytes ?? 64 * 1024 * 1024);
  const ledger = createStoreLedger(store, options.maxBytes, (name) => hot.drop(name));
  const blobKey = (imageId: string, key: string) => `variants/${imageId.toLowerCase()}/${key}`;
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
      // A cache: all-or-nothing is needed, durability is not (a lost variant is made again).
      await store.put(name, variant.data, { contentType: variant.contentType }, { durable: false });
      await ledger.touch(name, variant.data.byteLength);
      hot.keep(name, variant.data);
    },
    async removeImage(imageId) {
      const prefix = `variants/${imageId.toLowerCase()}/`;
      ledger.forgetPrefix(prefix);
      hot.dropPrefix(prefix);
      if (store.list === undefined) return;
      for await (const entry of store.list(prefix)) await store.delete(entry.key);
    },
  };
}

/** Variants kept in memory up to `memoryBytes`, least recently used out first; none over a quarter of it. */
function createHotVariants(memoryBytes: number) {
  const hot = new Map<string, Uint8Array>();
  let hotBytes = 0;
  const drop = (name: string) => {
    const data = hot.get(name);
    if (data === undefined) return;
    hot.delete(name);
    hotBytes -= data.byteLength;
  };
  return {
    get: (name: string) => hot.get(name),
    drop,
    dropPrefix(prefix: string) {
      for (const name of [...hot.keys()]) if (name.startsWith(prefix)) drop(name);
    },
    keep(name: string, data: Uint8Array) {
      drop(name);
      if (data.byteLength > memoryBytes / 4) return;
      hot.set(name, data);
      hotBytes += data.byteLength;
      while (hotBytes > memoryBytes) drop(hot.keys().next().value as string);
    },
  };
}

/**
 * The variants this node wrote or read on the store, least recently used first, with their sizes:
 * past `maxBytes`, the oldest are deleted from the store (and `evicted` is told).
 */
function createStoreLedger(store: BlobStore, maxBytes: number, evicted: (name: string) => void) {
  const entries = new Map<string, number>();
  let bytes = 0;
  const forget = (name: string) => {
    const known = entries.get(name);
    if (known === undefined) return;
    entries.delete(name);
    bytes -= known;
  };
  return {
    bytes: () => bytes,
    forget,
    forgetPrefix(prefix: string) {
      for (const name of [...entries.keys()]) if (name.startsWith(prefix)) forget(name);
    },
    async touch(name: string, size: number) {
      forget(name);
      entries.set(name, size);
      bytes += size;
      while (bytes > maxBytes && entries.size > 1) {
        const oldest = entries.keys().next().value as string;
        forget(oldest);
        evicted(oldest);
        await store.delete(oldest).catch(() => undefined);
      }
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
