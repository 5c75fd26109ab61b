import { ErrorCodes, isImagePipelineError, type ValidationIssue, validationError } from "../errors.js";
import {
  acceptedFormats,
  describeUnsupportedImage,
  type Image,
  type ImageFormat,
  sniffImageFormat,
} from "../image.js";
import { countJpegScans } from "../jpeg-scans.js";
import { formatBytes, type Limits } from "../limits.js";
import { parseAll, uploadImageSchema } from "../schemas.js";
import { BLACK } from "../transforms/color.js";
import { stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";
import {
  type Caller,
  type PipelineContext,
  probeInput,
  producedImageSteps,
  runCodec,
  storeNewImage,
} from "./context.js";

/** Input of {@link uploadImage}: the `name` form field and the `image` file. */
export interface UploadImageInput {
  /** 1..30 characters. */
  name: string;
  /** The file's bytes (jpeg, png, webp, gif, avif or tiff, sniffed from the bytes). */
  image: Uint8Array;
}

type IssueCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** What is wrong with candidate image bytes before any decode: absent, too large, not an image. */
function imageBytesIssues(
  image: Uint8Array | undefined,
  field: string,
  limits: Limits,
): { issues: ValidationIssue[]; code: IssueCode } {
  if (!(image instanceof Uint8Array)) {
    const message = image === undefined ? "is required" : "must be a file (bytes)";
    return { issues: [{ path: field, message }], code: ErrorCodes.VALIDATION_FAILED };
  }
  if (image.byteLength > limits.maxUploadBytes) {
    return {
      issues: [{ path: field, message: `must not be larger than ${formatBytes(limits.maxUploadBytes)}` }],
      code: ErrorCodes.IMAGE_TOO_LARGE,
    };
  }
  if (image.byteLength === 0 || sniffImageFormat(image) === null) {
    const why = image.byteLength === 0 ? null : describeUnsupportedImage(image);
    return {
      issues: [{ path: field, message: why ?? `must be ${acceptedFormats("file")}` }],
      code: ErrorCodes.INVALID_IMAGE,
    };
  }
  return { issues: [], code: ErrorCodes.VALIDATION_FAILED };
}

/**
 * Validates an upload: the name and the bytes (present, within the byte limit, a format sniffed
 * from the bytes). Every failing field is reported at once.
 */
export function parseUploadImage(
  input: UploadImageInput,
  context: Pick<PipelineContext, "limits">,
): UploadImageInput {
  const issues: ValidationIssue[] = [];
  let name: string | undefined;
  try {
    [{ name }] = parseAll([[uploadImageSchema, { name: input?.name }]] as const);
  } catch (error) {
    if (!isImagePipelineError(error)) throw error;
    issues.push(...error.issues);
  }
  const bytes = imageBytesIssues(input?.image, "image", context.limits);
  issues.push(...bytes.issues);
  if (issues.length > 0 || name === undefined) throw validationError(issues, bytes.code);
  return { name, image: input.image };
}

/**
 * Ingests new image bytes under a validated name: the format is sniffed from the bytes (uploads,
 * imports and generated images alike), the header is checked against the byte, pixel and side
 * limits before any decode, and the image is re-encoded (EXIF orientation applied, metadata such
 * as GPS stripped, embedded payloads destroyed). Problems with the bytes are reported on `field`.
 */
export async function ingestImage(
  context: PipelineContext,
  caller: Caller,
  input: UploadImageInput,
  field: string,
  options: { steps?: TransformStep[]; format?: ImageFormat } = {},
): Promise<Image> {
  const { limits } = context;
  const { image, name } = input;
  const bytes = imageBytesIssues(image, field, limits);
  if (bytes.issues.length > 0) throw validationError(bytes.issues, bytes.code);

  if (sniffImageFormat(image) === "jpeg") {
    const scans = countJpegScans(image, limits.maxJpegScans + 1);
    if (scans !== null && scans > limits.maxJpegScans) {
      throw validationError(
        [
          {
            path: field,
            message: `must be a jpeg with at most ${limits.maxJpegScans} scans (this progressive jpeg has more; re-encode it)`,
          },
        ],
        ErrorCodes.IMAGE_TOO_LARGE,
      );
    }
  }
  const header = await probeInput(context.codec, image, limits, field);

  // Extra steps (imagine's resize to its square) run in the same decode and encode as the test
  // mark, which is sized for the image they make.
  const extra = options.steps ?? [];
  const finalSize = extra.reduce<{ width: number; height: number }>(
    (size, step) => stepOutputSize(step, size),
    header,
  );
  const steps = [...extra, ...producedImageSteps(context, caller, finalSize)];
  const encoded = await runCodec(context, {
    input: image,
    steps,
    output: {
      format: options.format ?? header.format,
      quality: context.encodeQuality,
      flattenBackground: BLACK,
    },
    onError: { field },
    memory: { size: header, field, frames: header.frames },
  });
  return storeNewImage(context, caller, encoded, name);
}

/** `POST /v1/images/upload`: creates an image from uploaded bytes. */
export function uploadImage(
  context: PipelineContext,
  caller: Caller,
  input: UploadImageInput,
): Promise<Image> {
  return ingestImage(context, caller, input, "image");
}
