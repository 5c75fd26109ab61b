import type {
  CodecCapabilities,
  EncodedImage,
  ImageCodec,
  ImageFormat,
  ImageHeader,
  OutputOptions,
  Size,
  TransformRequest,
} from "@pixport/core";
import {
  ErrorCodes,
  IMAGE_FORMATS,
  ImagePipelineError,
  sniffImageFormat,
  TRANSFORM_STEP_TYPES,
} from "@pixport/core";
import type { Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { asBuffer, invalidImage, translateSharpError } from "./errors.js";
import {
  parseSharpImageCodecOptions,
  type ResolvedSharpImageCodecOptions,
  type SharpImageCodecOptions,
} from "./options.js";
import { compilePasses, sharpColor } from "./passes.js";

const FORMATS: readonly ImageFormat[] = IMAGE_FORMATS;

const CAPABILITIES: CodecCapabilities = Object.freeze({
  inputFormats: FORMATS,
  outputFormats: FORMATS,
  steps: TRANSFORM_STEP_TYPES,
});

/** The only libvips loaders left enabled by `blockUntrustedLoaders`. */
const ALLOWED_LOADERS = [
  "VipsForeignLoadJpegBuffer",
  "VipsForeignLoadPngBuffer",
  "VipsForeignLoadWebpBuffer",
];

/** PNG zlib level: 6 is zlib's own balance of size and speed. */
const PNG_COMPRESSION_LEVEL = 6;

/**
 * Creates an {@link ImageCodec} backed by sharp (libvips).
 *
 * - Reads and writes jpeg, png and webp and runs every transform step.
 * - Only bytes reach sharp: a non-`Uint8Array` input throws a `TypeError`, and bytes whose magic
 *   numbers are not jpeg, png or webp are refused with `INVALID_IMAGE` before sharp sees them.
 * - Decoding uses `limitInputPixels` (the request's `limits.maxInputPixels`, else
 *   `options.maxInputPixels`), `failOn: "warning"` (truncated or corrupt data is an error, never a
 *   grey-filled image) and sequential reads. EXIF orientation is applied, metadata is stripped.
 * - Errors: corrupt input → `INVALID_IMAGE`, over the pixel limit → `IMAGE_TOO_LARGE`, a step or
 *   format outside `capabilities` → `UNSUPPORTED_OPERATION`; the sharp error is kept as `cause`.
 *
 * Options are parsed once here; invalid options throw `INVALID_CONFIGURATION`. `concurrency`,
 * `cache` and `blockUntrustedLoaders` change process-wide sharp state.
 *
 * @example
 * ```ts
 * import { createImagePipeline } from "@pixport/core";
 * import { createSharpCodec } from "@pixport/codec-sharp";
 *
 * const codec = createSharpCodec({ concurrency: 2, cache: false });
 * const pipeline = createImagePipeline({ codec, blobStore, images, keys, publisher });
 * ```
 */
export function createSharpCodec(options: SharpImageCodecOptions = {}): ImageCodec {
  const settings = parseSharpImageCodecOptions(options);
  if (settings.concurrency !== undefined) sharp.concurrency(settings.concurrency);
  if (settings.cache !== undefined) sharp.cache(settings.cache);
  if (settings.blockUntrustedLoaders) {
    sharp.block({ operation: ["VipsForeignLoad"] });
    sharp.unblock({ operation: ALLOWED_LOADERS });
  }
  return {
    name: "sharp",
    capabilities: CAPABILITIES,
    probe: (input) => probe(input),
    transform: (request) => transform(request, settings),
  };
}

async function probe(input: Uint8Array): Promise<ImageHeader | null> {
  const bytes = asBuffer(input, "input");
  const format = sniffImageFormat(bytes);
  if (format === null) return null;
  try {
    // Header only: metadata() never decodes pixels, so the pixel cap is off here on purpose; a
    // decompression bomb reports its real size and the caller refuses it.
    const metadata = await sharp(bytes, { limitInputPixels: false, failOn: "warning" }).metadata();
    if (metadata.format !== format || !(metadata.width > 0) || !(metadata.height > 0)) return null;
    return { format, ...orientedSize(metadata) };
  } catch {
    return null;
  }
}

async function transform(
  request: TransformRequest,
  settings: ResolvedSharpImageCodecOptions,
): Promise<EncodedImage> {
  if (typeof request !== "object" || request === null) {
    throw new TypeError(
      `Expected object for request, received ${request === null ? "null" : typeof request}`,
    );
  }
  const input = asBuffer(request.input, "input");
  assertSupported(request);
  const format = sniffImageFormat(input);
  if (format === null) throw invalidImage("The input is not a jpeg, png or webp image.");

  const requested = request.limits?.maxInputPixels;
  const limitInputPixels =
    typeof requested === "number" && Number.isFinite(requested) && requested > 0
      ? Math.floor(requested)
      : settings.maxInputPixels;
  const decodeOptions: SharpOptions = {
    limitInputPixels,
    failOn: "warning",
    sequentialRead: true,
    autoOrient: true,
  };

  // The job's deadline: every sharp pipeline below gets sharp's own timeout for the time left
  // (libvips stops the work, it is not just abandoned), and no new pass starts after it.
  const timeoutMs = request.limits?.timeoutMs;
  const deadline =
    typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0
      ? Date.now() + timeoutMs
      : undefined;
  const bounded = (image: Sharp): Sharp => {
    if (deadline === undefined) return image;
    const left = deadline - Date.now();
    if (left <= 0) throw processingTimeout(timeoutMs as number);
    return image.timeout({ seconds: Math.max(1, Math.ceil(left / 1000)) });
  };

  try {
    // Header first: the pixel cap and the real format are checked before any pixel is decoded.
    const metadata = await sharp(input, { limitInputPixels, failOn: "warning" }).metadata();
    if (metadata.format !== format) {
      throw invalidImage(`The input's header does not match its ${format} signature.`);
    }
    const passes = compilePasses(request.steps, orientedSize(metadata), decodeOptions);

    let source: () => Sharp = () => sharp(input, decodeOptions);
    let size = orientedSize(metadata);
    let opaque = !metadata.hasAlpha;
    for (const [index, pass] of passes.entries()) {
      const operations = await pass.plan(size);
      if (operations === null) continue;
      const image = operations(source());
      const last = index === passes.length - 1;
      // Fusing the last pass with the encoder saves a raw round trip. For jpeg that is only right
      // when nothing can turn transparent after sharp's (early) flatten.
      if (last && !pass.materialise && (request.output.format !== "jpeg" || (opaque && pass.keepsOpaque))) {
        return await encode(bounded(image), request.output);
      }
      const { data, info } = await bounded(image.raw({ depth: "uchar" })).toBuffer({
        resolveWithObject: true,
      });
      const raw = { width: info.width, height: info.height, channels: info.channels };
      source = () => sharp(data, { raw, limitInputPixels: false });
      size = { width: info.width, height: info.height };
      opaque = info.channels === 1 || info.channels === 3;
    }
    return await encode(bounded(source()), request.output);
  } catch (error) {
    if (deadline !== undefined && /timeout/i.test(error instanceof Error ? error.message : "")) {
      throw processingTimeout(timeoutMs as number, error);
    }
    throw translateSharpError(error);
  }
}

function assertSupported(request: TransformRequest): void {
  if (!Array.isArray(request.steps)) {
    throw new TypeError(`Expected array for steps, received ${typeof request.steps}`);
  }
  for (const step of request.steps) {
    if (!CAPABILITIES.steps.includes(step?.type)) {
      throw new ImagePipelineError(
        ErrorCodes.UNSUPPORTED_OPERATION,
        `The sharp codec cannot run the ${String(step?.type)} step.`,
      );
    }
  }
  if (!CAPABILITIES.outputFormats.includes(request.output?.format)) {
    throw new ImagePipelineError(
      ErrorCodes.UNSUPPORTED_OPERATION,
      `The sharp codec cannot encode ${String(request.output?.format)}.`,
    );
  }
}

async function encode(image: Sharp, output: OutputOptions): Promise<EncodedImage> {
  const quality = Math.min(100, Math.max(1, Math.round(output.quality)));
  let encoder: Sharp;
  switch (output.format) {
    case "jpeg": {
      const { r, g, b } = sharpColor(output.flattenBackground);
      encoder = image.flatten({ background: { r, g, b } }).jpeg({ quality, mozjpeg: false });
      break;
    }
    case "png":
      encoder = image.png({ compressionLevel: PNG_COMPRESSION_LEVEL });
      break;
    case "webp":
      encoder = image.webp({ quality });
      break;
  }
  const { data, info } = await encoder.toBuffer({ resolveWithObject: true });
  return { data, format: output.format, width: info.width, height: info.height };
}

function processingTimeout(timeoutMs: number, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.PROCESSING_TIMEOUT,
    `the work took longer than ${Math.round(timeoutMs / 100) / 10} s and was stopped`,
    cause === undefined ? {} : { cause },
  );
}

/** Width and height after EXIF orientation: orientations 5 to 8 turn the image by 90°. */
function orientedSize(metadata: { width: number; height: number; orientation?: number | undefined }): Size {
  const turned = metadata.orientation !== undefined && metadata.orientation >= 5 && metadata.orientation <= 8;
  return turned
    ? { width: metadata.height, height: metadata.width }
    : { width: metadata.width, height: metadata.height };
}
