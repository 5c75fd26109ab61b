import type { z } from "zod";
import { imageNotFound, validationError } from "../errors.js";
import { type Image, type ImageRecord, MIME_TYPES, toImage } from "../image.js";
import type { ImagePublisher } from "../ports/image-publisher.js";
import { listImagesSchema, parseAll } from "../schemas.js";
import { type Caller, loadImageBytes, loadOwnedImage, type PipelineContext } from "./context.js";
import { type ImageIdInput, missingDependency } from "./inputs.js";

export type { ImageIdInput } from "./inputs.js";

/** `GET /v1/images/{image_id}`. */
export async function getImage(
  context: PipelineContext,
  caller: Caller,
  input: ImageIdInput,
): Promise<Image> {
  return toImage(await loadOwnedImage(context, caller, input.imageId));
}

/**
 * Input of {@link listImages}: `take` (1..100, default 10; a numeric string as in a query string)
 * and `from`, the inclusive id of the page's first image.
 */
export interface ListImagesRequest {
  take?: number | string | undefined;
  from?: string | undefined;
}

/** {@link ListImagesRequest} once validated. */
export type ListImagesQuery = z.output<typeof listImagesSchema>;

/**
 * Validates a page request. Query strings such as `take=undefined` (sent by some HTTP clients for
 * unset values) count as absent; a repeated parameter (an array) is a 422.
 */
export function parseListImages(input: ListImagesRequest): ListImagesQuery {
  const absent = (value: unknown) =>
    value === undefined || value === "undefined" || value === "" ? undefined : value;
  const rawTake = absent(input?.take);
  const take =
    typeof rawTake === "string" && /^-?\d+$/.test(rawTake)
      ? Number(rawTake)
      : rawTake === undefined
        ? undefined
        : rawTake;
  return parseAll([[listImagesSchema, { take, from: absent(input?.from) }]] as const)[0];
}

/** A page cursor: the `take` and inclusive `from` of another page. */
export interface PageCursor {
  take: number;
  from: string;
}

/** Result of {@link listImages}. */
export interface ImageList {
  data: Image[];
  next: PageCursor | null;
  previous: PageCursor | null;
}

/**
 * `GET /v1/images`: the caller's images of its own stage, newest first. `from` is the inclusive id
 * of the first image of the page; an id that is not one of the caller's images is a 422 on `from`.
 */
export async function listImages(
  context: PipelineContext,
  caller: Caller,
  query: ListImagesQuery,
): Promise<ImageList> {
  const page = await context.images.list({
    accountId: caller.accountId,
    stage: caller.keyKind,
    take: query.take,
    ...(query.from === undefined ? {} : { from: query.from }),
  });
  if (page === null) throw validationError([{ path: "from", message: "must be a valid image id" }]);
  return {
    data: page.items.map(toImage),
    next: page.next === null ? null : { take: query.take, from: page.next },
    previous: page.previous === null ? null : { take: query.take, from: page.previous },
  };
}

/** The lock that serialises publish, unpublish and delete of one image. */
const lockKey = (id: string) => `image:${id}`;

/**
 * `DELETE /v1/images/{image_id}`: removes the public copy first (so nothing stays public), then the
 * metadata (the image is gone for the API), then the private bytes (best effort: a leftover blob is
 * private and unreferenced). Images derived from it are untouched. A second delete is a 404.
 */
export async function deleteImage(
  context: PipelineContext,
  caller: Caller,
  input: ImageIdInput,
): Promise<void> {
  const record = await loadOwnedImage(context, caller, input.imageId);
  if (!(await removeImage(context, record))) throw imageNotFound(record.id);
}

/**
 * Removes an image under its lock (so no publish can slip in between): the public copy first,
 * whatever the record says (nothing is served after a delete), then the record (the image is gone
 * for the API), then the private bytes (best effort: a leftover blob is private and unreferenced).
 * Returns whether this call removed the record. Shared by delete and retention.
 */
export async function removeImage(context: PipelineContext, record: ImageRecord): Promise<boolean> {
  return context.locks.withLock(lockKey(record.id), async () => {
    const current = await context.images.get(record.id);
    if (current === null) return false;
    // Without a publisher nothing was published by this pipeline; a record that says otherwise
    // (published by another process) cannot be taken down here, so it is not deleted either.
    if (context.publisher !== undefined || current.url !== null) {
      await publisherOf(context, "deleteImage").unpublish({ id: current.id, format: current.format });
    }
    if (!(await context.images.delete(current.id))) return false;
    await forgetVariants(context, current.id);
    await context.blobStore.delete(current.blobKey).catch((error: unknown) => {
      context.logger.warn?.("could not delete the bytes of a deleted image", {
        id: current.id,
        error: String(error),
      });
    });
    return true;
  });
}

/** Result of {@link downloadImage}. */
export interface DownloadedImage {
  image: Image;
  data: Uint8Array;
  contentType: string;
}

/** `GET /v1/images/{image_id}/download`: the stored bytes with their MIME type. */
export async function downloadImage(
  context: PipelineContext,
  caller: Caller,
  input: ImageIdInput,
): Promise<DownloadedImage> {
  const record = await loadOwnedImage(context, caller, input.imageId);
  const data = await loadImageBytes(context, record);
  return { image: toImage(record), data, contentType: MIME_TYPES[record.format] };
}

/**
 * `POST /v1/images/{image_id}/publish`: idempotent; the same URL on every call. Runs under the
 * image's lock and re-reads the record there, so it cannot interleave with unpublish or delete.
 * With a publisher that knows its URLs (`urlFor`), the record is updated before the copy is made.
 */
export async function publishImage(
  context: PipelineContext,
  caller: Caller,
  input: ImageIdInput,
): Promise<Image> {
  const publisher = publisherOf(context, "publishImage");
  const id = (await loadOwnedImage(context, caller, input.imageId)).id;
  return context.locks.withLock(lockKey(id), async () => {
    const record = await loadOwnedImage(context, caller, id);
    const request = { id: record.id, format: record.format, blobKey: record.blobKey };
    const planned = publisher.urlFor?.(request);
    if (planned !== undefined) {
      let current = record;
      if (record.url !== planned) {
        const updated = await context.images.update(record.id, { url: planned });
        if (updated === null) throw imageNotFound(record.id);
        current = updated;
      }
      try {
        await publisher.publish(request);
      } catch (error) {
        // Nothing was made public: the record goes back to what it said (best effort; if this
        // fails too, the record announces a URL that answers 404 until publish is retried).
        if (record.url !== planned)
          await context.images.update(record.id, { url: record.url }).catch(() => null);
        throw error;
      }
      return toImage(current);
    }
    const url = await publisher.publish(request);
    if (record.url === url) return toImage(record);
    const updated = await context.images.update(record.id, { url });
    if (updated === null) {
      await publisher.unpublish({ id: record.id, format: record.format });
      throw imageNotFound(record.id);
    }
    return toImage(updated);
  });
}

/**
 * `POST /v1/images/{image_id}/unpublish`: idempotent, under the image's lock. The public copy is
 * removed before the record changes, so a failure never leaves an image public while its record
 * says private.
 */
export async function unpublishImage(
  context: PipelineContext,
  caller: Caller,
  input: ImageIdInput,
): Promise<Image> {
  const publisher = publisherOf(context, "unpublishImage");
  const id = (await loadOwnedImage(context, caller, input.imageId)).id;
  return context.locks.withLock(lockKey(id), async () => {
    const record = await loadOwnedImage(context, caller, id);
    await publisher.unpublish({ id: record.id, format: record.format });
    if (record.url === null) return toImage(record);
    const updated = await context.images.update(record.id, { url: null });
    if (updated === null) throw imageNotFound(record.id);
    // Variant URLs check the record (now private) on every request; the cached bytes go too.
    await forgetVariants(context, record.id);
    return toImage(updated);
  });
}

/** Removes an image's delivered variants (best effort: a leftover is unreachable and swept by age). */
async function forgetVariants(context: PipelineContext, id: string): Promise<void> {
  await context.variants?.removeImage(id).catch((error: unknown) => {
    context.logger.warn?.("could not remove the variants of an image", { id, error: String(error) });
  });
}

/** The pipeline's publisher; without one, publishing calls are a configuration error. */
export function publisherOf(context: PipelineContext, operation: string): ImagePublisher {
  if (context.publisher === undefined) throw missingDependency("publisher", operation);
  return context.publisher;
}
