import type { ImageRecord } from "../image.js";
import type { ImagePage, ListImagesQuery } from "../ports/image-repository.js";

/** The repository order: newest `createdAt` first, ties by `id` descending. */
export function compareNewestFirst(a: ImageRecord, b: ImageRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * Cuts one page out of an owner's records already sorted by {@link compareNewestFirst}, with the
 * inclusive `from` cursor. Returns `null` when `from` is not among them. Shared by adapters that
 * hold the sorted list in memory.
 */
export function paginate(sorted: readonly ImageRecord[], query: ListImagesQuery): ImagePage | null {
  let start = 0;
  if (query.from !== undefined) {
    start = sorted.findIndex((record) => record.id === query.from);
    if (start === -1) return null;
  }
  const items = sorted.slice(start, start + query.take);
  const after = sorted[start + query.take];
  return {
    items,
    next: after === undefined ? null : after.id,
    previous: start === 0 ? null : (sorted[Math.max(0, start - query.take)]?.id ?? null),
  };
}
