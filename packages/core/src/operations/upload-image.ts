import { ErrorCodes, isImagePipelineError, validationError } from "../errors.js";
import {
  acceptedFormats,
  describeUnsupportedImage,
  type Image,
  type ImageFormat,
  sniffImageFormat,
} from "../image.js";
import { countJpegScans } from "../jpeg-scans.js";
import { formatBytes } from "../limits.js";
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

/** Input of {@link uploadImage}. */
export interface UploadImageInput {
  /** The `name` form field (validated: string of 1..30 characters). */
  name: unknown;
  /** The `image` file bytes, or `undefined` when no file was sent. */
  image: Uint8Array | undefined;
}

/**
 * Validates and ingests new image bytes: the format is sniffed from the bytes (jpeg, png, webp;
 * everything else is refused), the header is checked against the byte, pixel and side limits
 * before any decode, and the image is re-encoded (EXIF orientation applied, metadata such as GPS
 * stripped, embedded payloads destroyed). Every failing field is reported at once.
 */
export async function ingestImage(
  context: PipelineContext,
  caller: Caller,
  input: UploadImageInput,
  field: string,
  options: { steps?: TransformStep[]; format?: ImageFormat } = {},
): Promise<Image> {
  const issues: { path: string; message: string }[] = [];
  let name: string | undefined;
  try {
    [{ name }] = parseAll([[uploadImageSchema, { name: input.name }]] as const);
  } catch (error) {
    if (!isImagePipelineError(error)) throw error;
    issues.push(...error.issues);
  }
  const { limits } = context;
  const image = input.image;
  let code: (typeof ErrorCodes)[keyof typeof ErrorCodes] = ErrorCodes.VALIDATION_FAILED;
  if (image === undefined) {
    issues.push({ path: field, message: "is required" });
  } else if (image.byteLength > limits.maxUploadBytes) {
    issues.push({ path: field, message: `must not be larger than ${formatBytes(limits.maxUploadBytes)}` });
    code = ErrorCodes.IMAGE_TOO_LARGE;
  } else if (image.byteLength === 0 || sniffImageFormat(image) === null) {
    const why = image.byteLength === 0 ? null : describeUnsupportedImage(image);
    issues.push({ path: field, message: why ?? `must be ${acceptedFormats("file")}` });
    code = ErrorCodes.INVALID_IMAGE;
  }
  if (issues.length > 0 || image === undefined || name === undefined) throw validationError(issues, code);

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
