import { ErrorCodes, ImagePipelineError } from "../errors.js";
import type { ImageRecord } from "../image.js";
import type { ImageRepository } from "../ports/image-repository.js";
import { compareNewestFirst, paginate } from "./paginate.js";

/**
 * An ImageRepository in process memory: the reference adapter of the ImageRepository conformance
 * suite. Records are copied in and out.
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({ ...deps, images: createMemoryImageRepository() });
 * ```
 */
export function createMemoryImageRepository(): ImageRepository {
  const records = new Map<string, ImageRecord>();
  return {
    async insert(record) {
      if (records.has(record.id)) {
        throw new ImagePipelineError(ErrorCodes.INTERNAL, `An image with id ${record.id} already exists.`);
      }
      records.set(record.id, { ...record });
    },
    async get(id) {
      const record = records.get(id);
      return record === undefined ? null : { ...record };
    },
    async update(id, patch) {
      const record = records.get(id);
      if (record === undefined) return null;
      // Only known fields, and `undefined` means "leave unchanged" (a spread would erase `url`).
      const updated = { ...record };
      if (patch.url !== undefined) updated.url = patch.url;
      if (patch.facts !== undefined) updated.facts = { ...patch.facts };
      records.set(id, updated);
      return { ...updated };
    },
    async delete(id) {
      return records.delete(id);
    },
    async list(query) {
      const owned = [...records.values()]
        .filter((record) => record.accountId === query.accountId && record.stage === query.stage)
        .sort(compareNewestFirst);
      const page = paginate(owned, query);
      return page === null ? null : { ...page, items: page.items.map((record) => ({ ...record })) };
    },
    async listCreatedBefore(query) {
      return [...records.values()]
        .filter((record) => record.stage === query.stage && record.createdAt < query.createdBefore)
        .sort((a, b) => -compareNewestFirst(a, b))
        .slice(0, query.limit)
        .map((record) => ({ ...record }));
    },
  };
}
