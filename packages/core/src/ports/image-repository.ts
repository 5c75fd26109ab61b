import type { ImageFacts, ImageRecord, KeyKind } from "../image.js";

/** Who owns images: an account and one of its two stages. */
export interface ImageOwner {
  accountId: string;
  stage: KeyKind;
}

/** Query of {@link ImageRepository.list}. */
export interface ListImagesQuery extends ImageOwner {
  /** Id of the first image of the page (inclusive cursor). Absent: the newest image. */
  from?: string;
  /** Page size, 1..100. */
  take: number;
}

/** One page of images, newest first. */
export interface ImagePage {
  items: ImageRecord[];
  /** Id of the image right after the last item of this page, or `null` at the end. */
  next: string | null;
  /** Id of the first item of the previous page (`take` items back), or `null` on the first page. */
  previous: string | null;
}

/** Fields that may change after creation. */
export interface ImageRecordPatch {
  url?: string | null;
  /** Facts computed later for a record made before they existed. */
  facts?: ImageFacts;
}

/** Query of {@link ImageRepository.listCreatedBefore}, used by retention sweeps. */
export interface ExpiredImagesQuery {
  stage: ImageOwner["stage"];
  /** ISO 8601 instant; records with `createdAt` strictly before it match. */
  createdBefore: string;
  /** At most this many records, oldest first. */
  limit: number;
}

/**
 * Image metadata storage.
 *
 * Ordering: newest first by `createdAt`, ties broken by `id` descending, so the order is total and
 * stable across pages and processes.
 *
 * Semantics every adapter must keep (checked by the ImageRepository conformance suite):
 * - `insert` stores a new record; inserting an existing id rejects and changes nothing.
 * - `get` returns `null` for an unknown id; absence is not an error.
 * - `update` applies the patch atomically and returns the new record, or `null` when the id is
 *   unknown (it never creates).
 * - `delete` returns whether a record was removed; deleting twice resolves `false`.
 * - `list` returns only the owner's records (one account, one stage). `from` is inclusive; when
 *   `from` is not an image of that owner, `list` returns `null`.
 * - Writes are visible to every later read, also from other processes on the same backend.
 * - Outages throw `ImagePipelineError` with code `STORAGE_UNAVAILABLE`.
 */
export interface ImageRepository {
  insert(record: ImageRecord): Promise<void>;
  get(id: string): Promise<ImageRecord | null>;
  update(id: string, patch: ImageRecordPatch): Promise<ImageRecord | null>;
  delete(id: string): Promise<boolean>;
  list(query: ListImagesQuery): Promise<ImagePage | null>;
  /** Records of one stage created before an instant, oldest first (retention sweeps). */
  listCreatedBefore(query: ExpiredImagesQuery): Promise<ImageRecord[]>;
}
