import { z } from "zod";
import { ErrorCodes, ImagePipelineError } from "./errors.js";
import { createRandomIdGenerator } from "./ids.js";
import type { Image } from "./image.js";
import { limitsSchema } from "./limits.js";
import { authenticate } from "./operations/authenticate.js";
import type { Caller, PipelineContext } from "./operations/context.js";
import {
  type DownloadedImage,
  deleteImage,
  downloadImage,
  getImage,
  type ImageIdInput,
  type ImageList,
  type ListImagesRequest,
  listImages,
  publishImage,
  unpublishImage,
} from "./operations/manage-images.js";
import {
  blurImage,
  convertImage,
  cropImage,
  mirrorImage,
  modulateImage,
  resizeImage,
  rotateImage,
  type TransformInput,
  watermarkImage,
} from "./operations/transform-image.js";
import { type UploadImageInput, uploadImage } from "./operations/upload-image.js";
import type { BlobStore } from "./ports/blob-store.js";
import { type Clock, systemClock } from "./ports/clock.js";
import type { IdGenerator } from "./ports/id-generator.js";
import type { ImageCodec } from "./ports/image-codec.js";
import type { ImagePublisher } from "./ports/image-publisher.js";
import type { ImageRepository } from "./ports/image-repository.js";
import type { KeyStore } from "./ports/key-store.js";
import { type Logger, silentLogger } from "./ports/logger.js";

/** The adapters a pipeline runs on, as one object with named fields. */
export interface ImagePipelineDeps {
  codec: ImageCodec;
  blobStore: BlobStore;
  images: ImageRepository;
  keys: KeyStore;
  publisher: ImagePublisher;
  /** @default the system clock */
  clock?: Clock;
  /** @default random `image_` ids from the platform CSPRNG */
  ids?: IdGenerator;
  /** @default silent */
  logger?: Logger;
}

/** Options of {@link createImagePipeline}, validated once at construction. */
export const imagePipelineOptionsSchema = z.object({
  /** Safety limits; every field has a default. */
  limits: limitsSchema.default(limitsSchema.parse({})),
  /**
   * Quality (1..100) used when jpeg/webp images are re-encoded by uploads and transforms other
   * than `convert` (which takes its own `quality`, default 100).
   * @default 90
   */
  encodeQuality: z.number().int().min(1).max(100).default(90),
});

export type ImagePipelineOptions = z.input<typeof imagePipelineOptionsSchema>;

/** Every operation of the IMG Processing API in scope, bound to one set of adapters. */
export interface ImagePipeline {
  readonly context: PipelineContext;
  authenticate(apiKey: string | null | undefined): Promise<Caller>;
  uploadImage(caller: Caller, input: UploadImageInput): Promise<Image>;
  getImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  listImages(caller: Caller, input: ListImagesRequest): Promise<ImageList>;
  deleteImage(caller: Caller, input: ImageIdInput): Promise<void>;
  downloadImage(caller: Caller, input: ImageIdInput): Promise<DownloadedImage>;
  publishImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  unpublishImage(caller: Caller, input: ImageIdInput): Promise<Image>;
  mirrorImage(caller: Caller, input: TransformInput): Promise<Image>;
  convertImage(caller: Caller, input: TransformInput): Promise<Image>;
  resizeImage(caller: Caller, input: TransformInput): Promise<Image>;
  cropImage(caller: Caller, input: TransformInput): Promise<Image>;
  rotateImage(caller: Caller, input: TransformInput): Promise<Image>;
  modulateImage(caller: Caller, input: TransformInput): Promise<Image>;
  blurImage(caller: Caller, input: TransformInput): Promise<Image>;
  watermarkImage(caller: Caller, input: TransformInput): Promise<Image>;
}

/**
 * Builds every operation over one set of adapters.
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({
 *   codec: createSharpCodec(),
 *   blobStore, images, keys, publisher,
 * });
 * const caller = await pipeline.authenticate(request.headers["x-api-key"]);
 * const image = await pipeline.resizeImage(caller, { imageId, body: { width: 800 } });
 * ```
 */
export function createImagePipeline(
  deps: ImagePipelineDeps,
  options: ImagePipelineOptions = {},
): ImagePipeline {
  const parsed = imagePipelineOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const paths = parsed.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
    throw new ImagePipelineError(ErrorCodes.INVALID_CONFIGURATION, `Invalid pipeline options (${paths}).`);
  }
  const context: PipelineContext = {
    codec: deps.codec,
    blobStore: deps.blobStore,
    images: deps.images,
    keys: deps.keys,
    publisher: deps.publisher,
    clock: deps.clock ?? systemClock,
    ids: deps.ids ?? createRandomIdGenerator(),
    logger: deps.logger ?? silentLogger,
    limits: parsed.data.limits,
    encodeQuality: parsed.data.encodeQuality,
  };
  const missing = ["jpeg", "png", "webp"].filter(
    (format) => !context.codec.capabilities.outputFormats.includes(format as never),
  );
  if (missing.length > 0) {
    context.logger.warn?.(`codec ${context.codec.name} cannot encode: ${missing.join(", ")}`);
  }
  return {
    context,
    authenticate: (apiKey) => authenticate(context, apiKey),
    uploadImage: (caller, input) => uploadImage(context, caller, input),
    getImage: (caller, input) => getImage(context, caller, input),
    listImages: (caller, input) => listImages(context, caller, input),
    deleteImage: (caller, input) => deleteImage(context, caller, input),
    downloadImage: (caller, input) => downloadImage(context, caller, input),
    publishImage: (caller, input) => publishImage(context, caller, input),
    unpublishImage: (caller, input) => unpublishImage(context, caller, input),
    mirrorImage: (caller, input) => mirrorImage(context, caller, input),
    convertImage: (caller, input) => convertImage(context, caller, input),
    resizeImage: (caller, input) => resizeImage(context, caller, input),
    cropImage: (caller, input) => cropImage(context, caller, input),
    rotateImage: (caller, input) => rotateImage(context, caller, input),
    modulateImage: (caller, input) => modulateImage(context, caller, input),
    blurImage: (caller, input) => blurImage(context, caller, input),
    watermarkImage: (caller, input) => watermarkImage(context, caller, input),
  };
}
