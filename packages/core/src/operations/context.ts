import { checkCodecCapabilities, checkInputBytes, uncheckedTransform } from "../codec-kit.js";
import {
  ErrorCodes,
  ImagePipelineError,
  imageNotFound,
  isImagePipelineError,
  validationError,
} from "../errors.js";
import {
  ANIMATED_FORMATS,
  acceptedFormats,
  blobKeyFor,
  type Image,
  type ImageFormat,
  type ImageRecord,
  type KeyKind,
  MIME_TYPES,
  sniffImageFormat,
  toImage,
} from "../image.js";
import { readImageHeader } from "../image-header.js";
import type { Limits } from "../limits.js";
import type { PolicyContext } from "../policies/limits-policy.js";
import { estimateJobBytes, type MemoryBudget } from "../policies/memory-budget.js";
import { type TestWatermark, testWatermarkLayer } from "../policies/test-watermark.js";
import type { UrlImportPolicy } from "../policies/url-import-policy.js";
import type { BlobStore } from "../ports/blob-store.js";
import type { Clock } from "../ports/clock.js";
import type { IdGenerator } from "../ports/id-generator.js";
import type { EncodedImage, ImageCodec, ImageHeader } from "../ports/image-codec.js";
import type { ImageFetcher } from "../ports/image-fetcher.js";
import type { ImagePublisher } from "../ports/image-publisher.js";
import type { ImageRepository } from "../ports/image-repository.js";
import type { KeyStore } from "../ports/key-store.js";
import type { LockService } from "../ports/lock-service.js";
import type { Logger } from "../ports/logger.js";
import type { PlaceholderEncoder } from "../ports/placeholder-encoder.js";
import type { VariantCache } from "../ports/variant-cache.js";
import type { Size } from "../transforms/plan.js";
import type { OutputOptions, TransformStep } from "../transforms/steps.js";

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
 * Runs `task` with the job's estimated pixel memory reserved in the node's budget (no-op without
 * one). `field` is blamed when the job can never fit.
 */
export async function withMemory<T>(
  context: PipelineContext,
  job: {
    input: Size;
    steps: readonly TransformStep[];
    field: string;
    signal?: AbortSignal | undefined;
    /** Frames the job decodes (an animation kept as one); 1 when absent. */
    frames?: number | undefined;
    /** Multiplies the estimate, for work beyond the codec's (remove-background: 2). */
    factor?: number | undefined;
  },
  task: () => Promise<T>,
): Promise<T> {
  if (context.memory === undefined) return task();
  const bytes = Math.ceil(
    estimateJobBytes(job.input, job.steps, Math.max(1, job.frames ?? 1)) * Math.max(1, job.factor ?? 1),
  );
  const release = await context.memory.reserve(bytes, job.field, job.signal);
  try {
    return await task();
  } finally {
    release();
  }
}

/** Wraps a codec failure on stored (already validated) bytes as an internal error. */
export function internalCodecError(error: unknown, format: ImageFormat): ImagePipelineError {
  if (isImagePipelineError(error) && error.code === ErrorCodes.PROCESSING_TIMEOUT) {
    return processingTimeout(error);
  }
  if (isImagePipelineError(error) && error.code !== ErrorCodes.INVALID_IMAGE) return error;
  return new ImagePipelineError(ErrorCodes.INTERNAL, `Processing a stored ${format} image failed.`, {
    cause: error,
  });
}

/** A codec's `PROCESSING_TIMEOUT` as a 422 entry on `field` (what the client can change). */
export function processingTimeout(error: ImagePipelineError, field = "image"): ImagePipelineError {
  if (error.issues.length > 0) return error;
  return new ImagePipelineError(ErrorCodes.PROCESSING_TIMEOUT, error.message, {
    issues: [
      {
        path: field,
        message: `could not be processed in time (${error.message}); use a smaller image or cheaper parameters`,
      },
    ],
    cause: error,
  });
}

/** Throws `UNSUPPORTED_OPERATION` before any work when the codec lacks a step or the output format. */
export function assertCodecSupports(
  context: PipelineContext,
  steps: readonly { type: string }[],
  format: ImageFormat,
): void {
  checkCodecCapabilities(context.codec, steps, format);
}

/**
 * How a failed codec job becomes the answer: `"stored"` for bytes pixport stored and validated
 * itself (an internal error, unless a limit or the deadline), `{field}` for a client's bytes (a
 * 422 naming the field), or a mapping of the caller's own.
 */
export type CodecFailure = "stored" | { field: string } | ((error: unknown) => Error);

/** A codec job run by {@link runCodec}. */
export interface CodecJob {
  /** Encoded bytes, or a stored image whose bytes are loaded once the job is admitted. */
  input: Uint8Array | ImageRecord;
  steps: TransformStep[];
  output: OutputOptions;
  onError: CodecFailure;
  /**
   * Admit the job against the node's memory budget first: its size, the field a refusal names,
   * its frames, a factor for work beyond the codec's, and the caller's abort signal.
   */
  memory?: { size: Size; field: string; frames?: number; factor?: number; signal?: AbortSignal | undefined };
  /** The capabilities were checked by the caller already (before work the codec does not do). */
  capabilitiesChecked?: boolean;
}

/** The client-facing form of a codec failure on bytes the client sent (`field`). */
function clientBytesError(error: unknown, field: string): Error {
  if (isImagePipelineError(error) && error.code === ErrorCodes.IMAGE_TOO_LARGE) {
    return validationError([{ path: field, message: error.message }], ErrorCodes.IMAGE_TOO_LARGE);
  }
  if (isImagePipelineError(error) && error.code === ErrorCodes.PROCESSING_TIMEOUT) {
    return processingTimeout(error, field);
  }
  if (isImagePipelineError(error) && error.code !== ErrorCodes.INVALID_IMAGE) return error;
  return new ImagePipelineError(ErrorCodes.INVALID_IMAGE, `${field} could not be decoded`, {
    issues: [
      {
        path: field,
        message: `must be a valid ${acceptedFormats("image").slice(2)}; it could not be decoded`,
      },
    ],
    cause: error,
  });
}

/**
 * The one way the core runs the codec: the capability check (before any byte is loaded), the
 * memory budget, the bytes (loaded from the store for a stored image), the byte guard, the
 * transform with the deployment's pixel limit and deadline, and the failure mapped for its
 * audience. Each of the codec kit's checks runs once: the adapter's own transform is called
 * without repeating them.
 */
export async function runCodec(context: PipelineContext, job: CodecJob): Promise<EncodedImage> {
  if (job.capabilitiesChecked !== true) checkCodecCapabilities(context.codec, job.steps, job.output.format);
  const run = async () => {
    const input = job.input instanceof Uint8Array ? job.input : await loadImageBytes(context, job.input);
    try {
      checkInputBytes(input);
      return await uncheckedTransform(context.codec)({
        input,
        steps: job.steps,
        output: job.output,
        limits: { maxInputPixels: context.limits.maxInputPixels, timeoutMs: context.limits.maxJobMs },
        ...(job.input instanceof Uint8Array ? {} : { sourceKey: job.input.blobKey }),
      });
    } catch (error) {
      const { onError } = job;
      if (typeof onError === "function") throw onError(error);
      if (onError === "stored") {
        throw internalCodecError(
          error,
          job.input instanceof Uint8Array ? job.output.format : job.input.format,
        );
      }
      throw clientBytesError(error, onError.field);
    }
  };
  const memory = job.memory;
  if (memory === undefined) return run();
  return withMemory(
    context,
    {
      input: memory.size,
      steps: job.steps,
      field: memory.field,
      signal: memory.signal,
      frames: memory.frames,
      factor: memory.factor,
    },
    run,
  );
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

/**
 * Reads the header of new input bytes through the codec and checks it before any pixel is decoded:
 * a format the codec cannot read, an animation it cannot keep, the side and pixel limits (per
 * frame and frames x width x height for the whole animation) and the frame count. Each refusal is
 * a 422 naming `field`.
 *
 * The limits are checked first on what the file's own header declares, read here without the
 * codec: a decoder's header read may already allocate the declared canvas (libwebp does, and
 * tcmalloc touches every page of it: a 38-byte WebP declaring 16383 x 16383 cost 1 GB of RSS), so
 * a file the header refuses never reaches it.
 */
export async function probeInput(
  codec: ImageCodec,
  bytes: Uint8Array,
  limits: Pick<Limits, "maxInputSide" | "maxInputPixels" | "maxFrames">,
  field: string,
): Promise<ImageHeader & { frames: number }> {
  const format = sniffImageFormat(bytes);
  const declared = format === null ? null : readImageHeader(bytes, format);
  if (declared !== null) {
    const turned = declared.orientation >= 5;
    checkDeclaredSize(
      {
        width: turned ? declared.height : declared.width,
        height: turned ? declared.width : declared.height,
        frames: declared.frames,
      },
      limits,
      field,
    );
  }
  const header = await codec.probe(bytes).catch(() => null);
  if (header === null) {
    throw validationError(
      [{ path: field, message: `must be a valid ${acceptedFormats("image").slice(2)}` }],
      ErrorCodes.INVALID_IMAGE,
    );
  }
  const frames = checkDeclaredSize(header, limits, field);
  if (!codec.capabilities.inputFormats.includes(header.format)) {
    throw new ImagePipelineError(
      ErrorCodes.UNSUPPORTED_OPERATION,
      `The ${codec.name} codec cannot read ${header.format}.`,
      {
        issues: [
          { path: field, message: `is a ${header.format} image, which the ${codec.name} codec cannot read` },
        ],
      },
    );
  }
  if (
    frames > 1 &&
    ANIMATED_FORMATS.includes(header.format) &&
    !(codec.capabilities.animation ?? []).includes(header.format)
  ) {
    throw new ImagePipelineError(
      ErrorCodes.UNSUPPORTED_OPERATION,
      `The ${codec.name} codec cannot keep a ${header.format} animation.`,
      {
        issues: [
          {
            path: field,
            message: `is an animated ${header.format} (${frames} frames), which the ${codec.name} codec cannot keep animated; send one frame or use the sharp codec`,
          },
        ],
      },
    );
  }
  return { ...header, frames };
}

/** Refuses a size over the input limits (a 422 naming `field`); returns the frame count (at least 1). */
function checkDeclaredSize(
  header: { width: number; height: number; frames?: number | undefined },
  limits: Pick<Limits, "maxInputSide" | "maxInputPixels" | "maxFrames">,
  field: string,
): number {
  const frames = Math.max(1, Math.floor(header.frames ?? 1));
  const what =
    frames > 1
      ? ` (received ${frames} frames of ${header.width} x ${header.height})`
      : ` (received ${header.width} x ${header.height})`;
  if (frames > limits.maxFrames) {
    throw validationError(
      [{ path: field, message: `must have at most ${limits.maxFrames} frames or pages${what}` }],
      ErrorCodes.IMAGE_TOO_LARGE,
    );
  }
  if (
    header.width > limits.maxInputSide ||
    header.height > limits.maxInputSide ||
    header.width * header.height * frames > limits.maxInputPixels
  ) {
    const whole = frames > 1 ? " in all its frames together" : "";
    throw validationError(
      [
        {
          path: field,
          message: `must be at most ${limits.maxInputSide} x ${limits.maxInputSide} pixels and ${limits.maxInputPixels / 1e6} megapixels${whole}${what}`,
        },
      ],
      ErrorCodes.IMAGE_TOO_LARGE,
    );
  }
  return frames;
}
