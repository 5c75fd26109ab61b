import { FILE_EXTENSIONS, type ImageFormat } from "../image.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { PipelineContext } from "./context.js";
import { publisherOf } from "./manage-images.js";

/** Input of {@link sweepOrphans}. */
export interface SweepOrphansInput {
  /** Only bytes written before this instant are considered: a write in progress is not an orphan. */
  writtenBefore: Date;
}

/** What {@link sweepOrphans} removed. */
export interface SweepOrphansResult {
  /** Private bytes that no record refers to (a crash between the bytes and the record). */
  privateBlobs: number;
  /** Public copies whose record is gone or not published (a crash in the middle of a publish). */
  publicCopies: number;
}

const IMAGE_KEY = /^images\/(image_[A-Za-z0-9]{24})\.([a-z0-9]+)$/;
const FORMAT_OF_EXTENSION = new Map<string, ImageFormat>(
  (Object.entries(FILE_EXTENSIONS) as [ImageFormat, string][]).map(([format, extension]) => [
    extension,
    format,
  ]),
);

/**
 * Repairs what an interrupted write left behind, from the stores that can list their keys
 * (`BlobStore.list`): private bytes older than the grace period that no record points at are
 * deleted, and public copies of images whose record is gone or private are unpublished (under the
 * image's lock, after re-reading the record). Safe to run on several nodes at once; stores without
 * `list` are skipped.
 */
export async function sweepOrphans(
  context: PipelineContext,
  input: SweepOrphansInput,
): Promise<SweepOrphansResult> {
  const result: SweepOrphansResult = { privateBlobs: 0, publicCopies: 0 };
  const cutoff = input.writtenBefore.getTime();
  for await (const { key, modifiedAt, id } of imageKeys(context.blobStore)) {
    if (modifiedAt.getTime() >= cutoff) continue;
    const record = await context.images.get(id);
    if (record !== null && record.blobKey === key) continue;
    await context.blobStore.delete(key);
    context.logger.info?.("sweep removed orphan bytes", { key });
    result.privateBlobs += 1;
  }
  const publicStore = context.urlImport.publicStore;
  if (publicStore !== undefined) {
    for await (const { modifiedAt, id, format } of imageKeys(publicStore)) {
      if (modifiedAt.getTime() >= cutoff || format === undefined) continue;
      const removed = await context.locks.withLock(`image:${id}`, async () => {
        const record = await context.images.get(id);
        if (record !== null && record.url !== null && record.format === format) return false;
        await publisherOf(context, "sweepOrphans").unpublish({ id, format });
        return true;
      });
      if (removed) {
        context.logger.warn?.("sweep took down a public copy without a published record", { id });
        result.publicCopies += 1;
      }
    }
  }
  return result;
}

async function* imageKeys(store: BlobStore) {
  if (store.list === undefined) return;
  for await (const entry of store.list("images/")) {
    const match = IMAGE_KEY.exec(entry.key);
    if (match === null) continue;
    yield { ...entry, id: match[1] as string, format: FORMAT_OF_EXTENSION.get(match[2] as string) };
  }
}
