import type { z } from "zod";
import type { BackgroundRemover } from "../ports/background-remover.js";
import type { ModelPorts } from "../ports/models.js";
import {
  blurSchema,
  classifySchema,
  convertSchema,
  createImageFromUrlSchema,
  cropSchema,
  extractFormattedTextSchema,
  imagineSchema,
  mirrorSchema,
  modulateSchema,
  removeBackgroundSchema,
  resizeSchema,
  rotateSchema,
  transformSchema,
  visualizeSchema,
  watermarkSchema,
} from "../schemas.js";
import type { Caller, PipelineContext } from "./context.js";
import { createImageFromUrl, parseCreateImageFromUrl } from "./create-image-from-url.js";
import type { OriginDelivery, OriginVariantRequest } from "./deliver-origin-variant.js";
import {
  parseSignedUrlRequest,
  signedUrlSchema,
  type VariantDelivery,
  type VariantRequest,
} from "./deliver-variant.js";
import { getImageMetadata } from "./image-facts.js";
import {
  bodyParser,
  type ImageBodyInput,
  imageBodyParser,
  type ParsedBody,
  type ParsedImageBody,
  parseImageId,
} from "./inputs.js";
import {
  deleteImage,
  downloadImage,
  getImage,
  listImages,
  parseListImages,
  publishImage,
  unpublishImage,
} from "./manage-images.js";
import { classifyImage, extractFormattedText, imagineImage, visualizeImage } from "./model-operations.js";
import { removeImageBackground } from "./remove-background.js";
import {
  blurImage,
  convertImage,
  cropImage,
  mirrorImage,
  modulateImage,
  parseTransform,
  resizeImage,
  rotateImage,
  transformImage,
  watermarkImage,
} from "./transform-image.js";
import { parseUploadImage, uploadImage } from "./upload-image.js";

/** What an operation runs on besides its input: the context and the pipeline's optional ports. */
export interface OperationEnv {
  context: PipelineContext;
  /** The model ports, behind the pipeline's circuit breaker. */
  models: ModelPorts;
  backgroundRemover: BackgroundRemover | undefined;
  delivery: VariantDelivery;
  originDelivery: OriginDelivery;
}

/**
 * How the pipeline runs an operation:
 * - `gated`: an image job, pixel work on this node. It takes a slot of the node's work gate
 *   first (an overloaded node refuses before any quota is reserved), then reserves its billing
 *   units from the monthly quota (given back on failure).
 * - `billed`: reserves its units without a slot: publishing (a copy of bytes) and the model-backed
 *   operations, which mostly wait on a provider, are bounded by their deadline and the model
 *   circuit breaker; holding slots while waiting would starve the transforms.
 * - `free`: neither (reads, deletes, signed URLs, variant delivery, whose cache misses take a
 *   slot of the gate inside).
 */
export type RunnerKind = "gated" | "billed" | "free";

/** An HTTP route of an operation, `METHOD /path` with `{param}` placeholders. */
export type RouteKey = `${"GET" | "POST" | "DELETE"} /${string}`;

/** How a row runs: free, or gated/billed with the processed images a successful call bills. */
export type RunnerSpec =
  | { runner: "free" }
  | {
      runner: "gated" | "billed";
      /** Processed images a successful call bills (contract section 3 and P8). */
      billing: number;
    };

/** What a row holds besides its runner. */
export interface OperationSpec<Input, Parsed, Result, Who = Caller> {
  /** The routes that serve it in the HTTP route table (a test holds both tables to this). */
  routes: readonly RouteKey[];
  /** The schema of its JSON body (validation and the OpenAPI document); none without a JSON body. */
  schema: z.ZodType | undefined;
  /**
   * Validates the input at run time (JavaScript callers and HTTP bodies alike): every failing
   * field in one `VALIDATION_FAILED` (422), with the messages of the contract.
   */
  parse(input: Input, context: PipelineContext): Parsed;
  /** Runs the operation on its validated input. */
  run(env: OperationEnv, caller: Who, input: NoInfer<Parsed>): Promise<Result>;
}

/** One row of {@link OPERATIONS_TABLE}. */
export type OperationRow<Input, Parsed, Result, Who = Caller> = RunnerSpec &
  OperationSpec<Input, Parsed, Result, Who>;

const row = <const R extends RunnerSpec, Input, Parsed, Result, Who = Caller>(
  runner: R,
  spec: OperationSpec<Input, Parsed, Result, Who>,
) => ({ ...runner, ...spec });

/** The row of an operation on one stored image with a JSON body validated by `schema`. */
const imageRow = <const R extends RunnerSpec, S extends z.ZodType, Result>(
  runner: R,
  schema: S,
  spec: Pick<OperationSpec<ImageBodyInput<S>, ParsedImageBody<S>, Result>, "routes" | "run">,
) => row(runner, { ...spec, schema, parse: imageBodyParser(schema) });

/**
 * The one table of pixport's operations. Each row says how the pipeline runs the operation
 * (`runner`: gated, billed or free), how many processed images a successful call bills (every
 * 201 counts one, remove-background two; reads and deletes none), its body schema, how its input
 * is validated, the function that runs it, and its HTTP routes. The pipeline's methods (and their
 * types), billing, the work gate, the HTTP route table's operation ids and the request schemas of
 * the OpenAPI document all read it, so adding an operation is its file, its row here, and its test.
 */
export const OPERATIONS_TABLE = {
  /** `POST /v1/images/upload` (multipart `name` and `image`): a new image from uploaded bytes. */
  uploadImage: row(
    { runner: "gated", billing: 1 },
    {
      routes: ["POST /v1/images/upload", "POST /v1/images"],
      schema: undefined,
      parse: parseUploadImage,
      run: ({ context }, caller, input) => uploadImage(context, caller, input),
    },
  ),
  /** `POST /v1/images` (JSON `{name, url}`): a new image from a URL on an allowed origin. */
  createImageFromUrl: row(
    { runner: "gated", billing: 1 },
    {
      routes: ["POST /v1/images"],
      schema: createImageFromUrlSchema,
      parse: parseCreateImageFromUrl,
      run: ({ context }, caller, input) => createImageFromUrl(context, caller, input),
    },
  ),
  /** `POST /v1/images/imagine`: a 1024 x 1024 JPEG image from a prompt. */
  imagineImage: row(
    { runner: "billed", billing: 1 },
    {
      routes: ["POST /v1/images/imagine"],
      schema: imagineSchema,
      parse: bodyParser(imagineSchema),
      run: ({ context, models }, caller, input: ParsedBody<typeof imagineSchema>) =>
        imagineImage(context, models, caller, input),
    },
  ),
  /** `GET /v1/images`: the caller's images of its stage, newest first. */
  listImages: row(
    { runner: "free" },
    {
      routes: ["GET /v1/images"],
      schema: undefined,
      parse: parseListImages,
      run: ({ context }, caller, input) => listImages(context, caller, input),
    },
  ),
  /** `GET /v1/images/{image_id}`. */
  getImage: row(
    { runner: "free" },
    {
      routes: ["GET /v1/images/{image_id}"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => getImage(context, caller, input),
    },
  ),
  /**
   * The image's facts: size, format, frames, `has_alpha`, `dominant_color` and its ThumbHash and
   * BlurHash placeholders. Computed once when the image is created (older images: on first call,
   * then stored); not billed.
   */
  getImageMetadata: row(
    { runner: "free" },
    {
      routes: ["GET /v1/images/{image_id}/metadata"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => getImageMetadata(context, caller, input.imageId),
    },
  ),
  /** `POST /v1/images/{image_id}/signed-url`: an expiring variant URL for the owner's image. Not billed. */
  createSignedUrl: row(
    { runner: "free" },
    {
      routes: ["POST /v1/images/{image_id}/signed-url"],
      schema: signedUrlSchema,
      parse: parseSignedUrlRequest,
      run: ({ delivery }, caller, input) => delivery.signedUrl(caller, input),
    },
  ),
  /**
   * `GET /v/{signature}/{image_id}/{modifiers}.{ext}`: a variant of a published image (or of any
   * image of a URL made by `createSignedUrl`, until it expires), computed once and cached. No key,
   * not billed, not rate limited; misses take a slot of the work gate.
   */
  deliverVariant: row(
    { runner: "free" },
    {
      routes: ["GET /v/{signature}/{image_id}/{variant}"],
      schema: undefined,
      parse: (request: VariantRequest) => request,
      run: ({ delivery }, _caller: null, request: VariantRequest) => delivery.deliver(request),
    },
  ),
  /**
   * `GET /v/{signature}/o/{origin}/{modifiers}/{path}`: a variant of an image on a configured
   * origin, under the rules of `deliverVariant`; misses count against the origin's account.
   */
  deliverOriginVariant: row(
    { runner: "free" },
    {
      routes: ["GET /v/{signature}/o/{origin}/{modifiers}/{path}"],
      schema: undefined,
      parse: (request: OriginVariantRequest) => request,
      run: ({ originDelivery }, _caller: null, request: OriginVariantRequest) =>
        originDelivery.deliver(request),
    },
  ),
  /** `DELETE /v1/images/{image_id}`: the image, its bytes and its public copy. */
  deleteImage: row(
    { runner: "free" },
    {
      routes: ["DELETE /v1/images/{image_id}"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => deleteImage(context, caller, input),
    },
  ),
  /** `GET /v1/images/{image_id}/download`: the stored bytes with their MIME type. */
  downloadImage: row(
    { runner: "free" },
    {
      routes: ["GET /v1/images/{image_id}/download"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => downloadImage(context, caller, input),
    },
  ),
  /** `POST /v1/images/{image_id}/publish`: idempotent; the same URL on every call. */
  publishImage: row(
    { runner: "billed", billing: 1 },
    {
      routes: ["POST /v1/images/{image_id}/publish"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => publishImage(context, caller, input),
    },
  ),
  /** `POST /v1/images/{image_id}/unpublish`: idempotent. */
  unpublishImage: row(
    { runner: "billed", billing: 1 },
    {
      routes: ["POST /v1/images/{image_id}/unpublish"],
      schema: undefined,
      parse: parseImageId,
      run: ({ context }, caller, input) => unpublishImage(context, caller, input),
    },
  ),
  /** `POST /v1/images/{image_id}/mirror`. */
  mirrorImage: imageRow({ runner: "gated", billing: 1 }, mirrorSchema, {
    routes: ["POST /v1/images/{image_id}/mirror"],
    run: ({ context }, caller, input) => mirrorImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/convert`: re-encodes to `format` (`jpg` is `jpeg`) at `quality`. */
  convertImage: imageRow({ runner: "gated", billing: 1 }, convertSchema, {
    routes: ["POST /v1/images/{image_id}/convert"],
    run: ({ context }, caller, input) => convertImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/resize`. */
  resizeImage: imageRow({ runner: "gated", billing: 1 }, resizeSchema, {
    routes: ["POST /v1/images/{image_id}/resize"],
    run: ({ context }, caller, input) => resizeImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/transform`: up to 10 steps, one decode/encode, one new image, billed once. */
  transformImage: row(
    { runner: "gated", billing: 1 },
    {
      routes: ["POST /v1/images/{image_id}/transform"],
      schema: transformSchema,
      parse: parseTransform,
      run: ({ context }, caller, input) => transformImage(context, caller, input),
    },
  ),
  /** `POST /v1/images/{image_id}/crop`. */
  cropImage: imageRow({ runner: "gated", billing: 1 }, cropSchema, {
    routes: ["POST /v1/images/{image_id}/crop"],
    run: ({ context }, caller, input) => cropImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/rotate`. */
  rotateImage: imageRow({ runner: "gated", billing: 1 }, rotateSchema, {
    routes: ["POST /v1/images/{image_id}/rotate"],
    run: ({ context }, caller, input) => rotateImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/modulate`. */
  modulateImage: imageRow({ runner: "gated", billing: 1 }, modulateSchema, {
    routes: ["POST /v1/images/{image_id}/modulate"],
    run: ({ context }, caller, input) => modulateImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/blur`. */
  blurImage: imageRow({ runner: "gated", billing: 1 }, blurSchema, {
    routes: ["POST /v1/images/{image_id}/blur"],
    run: ({ context }, caller, input) => blurImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/remove-background`: a PNG with transparency, billed 2 (contract P8). */
  removeImageBackground: imageRow({ runner: "gated", billing: 2 }, removeBackgroundSchema, {
    routes: ["POST /v1/images/{image_id}/remove-background"],
    run: ({ context, backgroundRemover }, caller, input) =>
      removeImageBackground(context, backgroundRemover, caller, input),
  }),
  /** `POST /v1/images/{image_id}/watermark`: other images of the caller drawn over the image. */
  watermarkImage: imageRow({ runner: "gated", billing: 1 }, watermarkSchema, {
    routes: ["POST /v1/images/{image_id}/watermark"],
    run: ({ context }, caller, input) => watermarkImage(context, caller, input),
  }),
  /** `POST /v1/images/{image_id}/visualize`: answers a prompt about the image. */
  visualizeImage: imageRow({ runner: "billed", billing: 1 }, visualizeSchema, {
    routes: ["POST /v1/images/{image_id}/visualize"],
    run: ({ context, models }, caller, input) => visualizeImage(context, models, caller, input),
  }),
  /** `POST /v1/images/{image_id}/classify`: test keys get the masked result without a model call. */
  classifyImage: imageRow({ runner: "billed", billing: 1 }, classifySchema, {
    routes: ["POST /v1/images/{image_id}/classify"],
    run: ({ context, models }, caller, input) => classifyImage(context, models, caller, input),
  }),
  /** `POST /v1/images/{image_id}/extract-formatted-text`: live keys only. */
  extractFormattedText: imageRow({ runner: "billed", billing: 1 }, extractFormattedTextSchema, {
    routes: ["POST /v1/images/{image_id}/extract-formatted-text"],
    run: ({ context, models }, caller, input) => extractFormattedText(context, models, caller, input),
  }),
} as const;

/** The id of an operation (its pipeline method and its OpenAPI operation id). */
export type OperationId = keyof typeof OPERATIONS_TABLE;

/** Every operation id, in table order. */
export const OPERATION_IDS = Object.keys(OPERATIONS_TABLE) as OperationId[];

/** The operations a successful call of which bills processed images. */
export type BilledOperationId = {
  [K in OperationId]: (typeof OPERATIONS_TABLE)[K] extends { billing: number } ? K : never;
}[OperationId];

/** The input a caller gives operation `K` (`z.input` of its schemas). */
export type OperationInput<K extends OperationId> = Parameters<(typeof OPERATIONS_TABLE)[K]["parse"]>[0];

/** What operation `K` answers. */
export type OperationResult<K extends OperationId> = Awaited<ReturnType<(typeof OPERATIONS_TABLE)[K]["run"]>>;

/** Whether `value` is an operation id. */
export function isOperationId(value: string): value is OperationId {
  return Object.hasOwn(OPERATIONS_TABLE, value);
}

/** The runner kind of an operation id, `undefined` for an id that is not an operation. */
export function runnerOf(operationId: string): RunnerKind | undefined {
  return isOperationId(operationId) ? OPERATIONS_TABLE[operationId].runner : undefined;
}
