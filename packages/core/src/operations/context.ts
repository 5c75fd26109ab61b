import { ErrorCodes, ImagePipelineError, imageNotFound } from "../errors.js";
import { blobKeyFor, type Image, type ImageRecord, type KeyKind, MIME_TYPES, toImage } from "../image.js";
import type { Limits } from "../limits.js";
import type { PolicyContext } from "../policies/limits-policy.js";
import type { MemoryBudget } from "../policies/memory-budget.js";
import { type TestWatermark, testWatermarkLayer } from "../policies/test-watermark.js";
import type { UrlImportPolicy } from "../policies/url-import-policy.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { Clock } from "../ports/clock.js";
import type { IdGenerator } from "../ports/id-generator.js";
import type { EncodedImage, ImageCodec } from "../ports/image-codec.js";
import type { ImageFetcher } from "../ports/image-fetcher.js";
import type { ImagePublisher } from "../ports/image-publisher.js";
import type { ImageRepository } from "../ports/image-repository.js";
import type { KeyStore } from "../ports/key-store.js";
import type { LockService } from "../ports/lock-service.js";
import type { Logger } from "../ports/logger.js";
import type { PlaceholderEncoder } from "../ports/placeholder-encoder.js";
import type { VariantCache } from "../ports/variant-cache.js";
import type { Size } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";

/** The authenticated caller of an operation. */
export interface Caller {
  accountId: string;
  /** The key's kind, which is also the stage its images live in. */
  keyKind: KeyKind;
  /** Id of the key record (not the secret). */
  keyId: string;
  /** Per-key override of the requests-per-minute limit, from the key record. */
  rateLimitPerMinute?: number | null;
}

/** Everything an operation needs, resolved once by `createImagePipeline`. */
export interface PipelineContext {
  codec: ImageCodec;
  blobStore: BlobStore;
  images: ImageRepository;
  /** API keys (`authenticate`); absent for a library pipeline that never authenticates. */
  keys: KeyStore | undefined;
  /** Public copies (publish, unpublish, delete of a published image); absent for a library pipeline. */
  publisher: ImagePublisher | undefined;
  /** Serialises publish, unpublish and delete of one image (across processes when shared). */
  locks: LockService;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  limits: Limits;
  /** Quality used when re-encoding jpeg/webp outside `convert`. */
  encodeQuality: number;
  /** URL import: the origin policy, the fetcher and the public store read for own-storage URLs. */
  /** Rate limiter, quota, accounts and the policy numbers. */
  policy: PolicyContext;
  /** The mark stamped on every image a test key produces. */
  testWatermark: TestWatermark;
  /**
   * Called with every new record once it is stored: the pipeline schedules its facts (metadata)
   * there, computed in the background while the node has no image job running.
   */
  afterCreate?: (record: ImageRecord) => void;
  /** Delivered variants of images (removed on unpublish and delete). */
  variants: VariantCache | undefined;
  /** Encodes the ThumbHash/BlurHash of new images; `undefined`: metadata has `null` hashes. */
  placeholders: PlaceholderEncoder | undefined;
  /** The node's memory budget of image jobs; `undefined` when the pipeline has none. */
  memory: MemoryBudget | undefined;
  urlImport: {
    policy: UrlImportPolicy;
    fetcher: ImageFetcher | undefined;
    publicStore: BlobStore | undefined;
  };
}

/**
 * Loads an image the caller may use: unknown id or the other stage of the same account gives 404
 * (`Image with id <id> not found.`), another account's image gives 403 (contract P17).
 */
export async function loadOwnedImage(
  context: PipelineContext,
  caller: Caller,
  id: string,
): Promise<ImageRecord> {
  const record = await context.images.get(id);
  if (record === null) throw imageNotFound(id);
  if (record.accountId !== caller.accountId) {
    throw new ImagePipelineError(ErrorCodes.FORBIDDEN, `Image with id ${id} belongs to another account.`);
  }
  if (record.stage !== caller.keyKind) throw imageNotFound(id);
  return record;
}

/** Loads the private bytes of a record; a missing blob is an internal inconsistency (500). */
export async function loadImageBytes(context: PipelineContext, record: ImageRecord): Promise<Uint8Array> {
  const data = await context.blobStore.get(record.blobKey);
  if (data === null) {
    throw new ImagePipelineError(ErrorCodes.INTERNAL, `The stored bytes of image ${record.id} are missing.`);
  }
  return data;
}

/**
 * Stores a newly produced image: blob first, metadata second, so a record never points at missing
 * bytes. When the metadata write fails the blob is removed again (best effort; a leftover blob is
 * private and unreferenced).
 */
export async function storeNewImage(
  context: PipelineContext,
  caller: Caller,
  encoded: EncodedImage,
  name: string,
): Promise<Image> {
  const id = context.ids.imageId();
  const blobKey = blobKeyFor(id, encoded.format);
  const record: ImageRecord = {
    id,
    accountId: caller.accountId,
    stage: caller.keyKind,
    name,
    format: encoded.format,
    width: encoded.width,
    height: encoded.height,
    size: encoded.data.byteLength,
    createdAt: context.clock.now().toISOString(),
    blobKey,
    url: null,
  };
  const frames = Math.max(1, encoded.frames ?? 1);
  if (frames > 1) record.frames = frames;
  await context.blobStore.put(blobKey, encoded.data, { contentType: MIME_TYPES[encoded.format] });
  try {
    await context.images.insert(record);
  } catch (error) {
    await context.blobStore.delete(blobKey).catch((cleanupError: unknown) => {
      context.logger.warn?.("could not remove the blob of a failed insert", {
        blobKey,
        error: String(cleanupError),
      });
    });
    throw error;
  }
  context.afterCreate?.(record);
  return toImage(record);
}

/**
 * The steps that end every image a caller produces: for test keys the test mark tiled over the
 * final image (no request field can turn it off); nothing for live keys.
 */
export function producedImageSteps(
  context: PipelineContext,
  caller: Caller,
  finalSize: Size,
): TransformStep[] {
  if (caller.keyKind !== "test") return [];
  return [{ type: "overlay", layers: [testWatermarkLayer(finalSize, context.testWatermark)] }];
}

export {
  assertCodecSupports,
  type CodecFailure,
  type CodecJob,
  internalCodecError,
  probeInput,
  processingTimeout,
  runCodec,
  withMemory,
} from "./codec-runner.js";
