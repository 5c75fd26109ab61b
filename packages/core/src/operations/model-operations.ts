import { ErrorCodes, ImagePipelineError, isImagePipelineError, validationError } from "../errors.js";
import { type Image, sniffImageFormat } from "../image.js";
import type { Classification } from "../ports/classifier.js";
import type { ModelPorts } from "../ports/models.js";
import type { TextFormat } from "../ports/text-extractor.js";
import type { ModelImage, ModelProvider } from "../ports/vision-model.js";
import type {
  classifySchema,
  extractFormattedTextSchema,
  imagineSchema,
  visualizeSchema,
} from "../schemas.js";
import type { ResizeStep, TransformStep } from "../transforms/steps.js";
import { type Caller, loadImageBytes, loadOwnedImage, type PipelineContext, runCodec } from "./context.js";
import type { BodyInput, ImageBodyInput, ParsedBody, ParsedImageBody } from "./inputs.js";
import { ingestImage } from "./upload-image.js";

/** Contract defaults (P14, P15); classify and extract have no API-visible model. */
export const DEFAULT_MODELS = { imagine: "sdxl", visualize: "uform-gen" } as const;
/** Longest side of images sent to a model when its provider does not say. */
export const DEFAULT_MODEL_IMAGE_SIDE = 1024;
/** Size of every imagined image (contract 5.3, P14). */
export const IMAGINE_SIZE = 1024;

/** The P9 answer of `classify` for test keys: no model is called. */
export const MASKED_CLASSIFICATION: Classification = Object.freeze({
  main_label: "result masked",
  main_score: 0,
  secondary_labels: Array.from({ length: 4 }, () => ({ label: "result masked", score: 0 })),
}) as Classification;

/** Input of `visualize`: the image id and `{prompt, model?}`. */
export type VisualizeImageInput = ImageBodyInput<typeof visualizeSchema>;
/** Input of `classify`: the image id (the body is `{}` or absent). */
export type ClassifyImageInput = ImageBodyInput<typeof classifySchema>;
/** Input of `extract-formatted-text`: the image id and `{format}`. */
export type ExtractFormattedTextImageInput = ImageBodyInput<typeof extractFormattedTextSchema>;
/** Input of a model operation on an existing image with a prompt (visualize). */
export type ModelImageInput = VisualizeImageInput;

/** Input of {@link imagineImage}: `{name, prompt, negative_prompt?, seed?, model?}`. */
export type ImagineImageInput = BodyInput<typeof imagineSchema>;

/**
 * Picks the model: the requested one when this deployment serves it (else 422 on `model`), or the
 * provider's default, or the contract's. A missing provider or an unconfigured default model is
 * `MODEL_NOT_CONFIGURED` (501) naming the operation and the model.
 */
function resolveModel<P extends ModelProvider>(
  provider: P | undefined,
  operation: string,
  requested: string | undefined,
  fallback: string | undefined,
): { provider: P; model: string } {
  const model = requested ?? provider?.defaultModel ?? fallback ?? provider?.models[0];
  if (provider === undefined || model === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.MODEL_NOT_CONFIGURED,
      `${operation} is not available on this server: no model provider is configured${model === undefined ? "" : ` (model ${model})`}.`,
    );
  }
  if (!provider.models.includes(model)) {
    if (requested !== undefined) {
      throw validationError([
        {
          path: "model",
          message: `${requested} is not configured on this server (configured: ${provider.models.join(", ") || "none"})`,
        },
      ]);
    }
    throw new ImagePipelineError(
      ErrorCodes.MODEL_NOT_CONFIGURED,
      `${operation} is not available on this server: its default model ${model} is not configured.`,
    );
  }
  return { provider, model };
}

/** A provider that answered something other than a pixport error is a bad upstream answer. */
function upstreamFailure(error: unknown, model: string): never {
  if (isImagePipelineError(error)) throw error;
  throw new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, `The model ${model} failed.`, { cause: error });
}

/**
 * Re-encodes a stored image as JPEG no larger than `maxSide` on its longest side, so a model never
 * receives the full original (nor its alpha channel or metadata). With `lossless` (a provider that
 * reads pixels itself, such as an OCR engine), a PNG of the full-size pixels instead: a JPEG
 * re-encode and a downscale both lose the fine strokes that text recognition needs.
 */
export async function prepareModelImage(
  context: PipelineContext,
  caller: Caller,
  imageId: string,
  maxSide: number,
  lossless = false,
): Promise<ModelImage> {
  const record = await loadOwnedImage(context, caller, imageId);
  const white = { r: 255, g: 255, b: 255, alpha: 1 };
  // The copy for the model is a codec job like any other: it waits for the node's memory budget.
  const memory = { size: record, field: "image", frames: record.frames };
  if (lossless && record.format === "png" && (record.frames ?? 1) === 1) {
    // A stored PNG is already the core's own lossless encode of the original's pixels (uploads
    // are re-encoded: EXIF orientation applied, metadata dropped): decoding and encoding it again
    // would hand over the same pixels, later. (Measured on OCR pages, 1000 to 3000 px: most of the
    // HTTP path's time beyond the extractor's own.)
    const data = await loadImageBytes(context, record);
    return { data, mimeType: "image/png", width: record.width, height: record.height };
  }
  if (lossless) {
    const encoded = await runCodec(context, {
      input: record,
      steps: [],
      output: { format: "png", quality: 100, flattenBackground: white },
      onError: "stored",
      memory,
    });
    return { data: encoded.data, mimeType: "image/png", width: encoded.width, height: encoded.height };
  }
  const scale = Math.min(1, maxSide / Math.max(record.width, record.height));
  const width = Math.max(1, Math.round(record.width * scale));
  const height = Math.max(1, Math.round(record.height * scale));
  const resize: ResizeStep = {
    type: "resize",
    width,
    height,
    fit: "fill",
    position: "center",
    background: white,
  };
  const encoded = await runCodec(context, {
    input: record,
    steps: scale < 1 ? [resize] : [],
    output: { format: "jpeg", quality: 85, flattenBackground: white },
    onError: "stored",
    memory,
  });
  return { data: encoded.data, mimeType: "image/jpeg", width: encoded.width, height: encoded.height };
}

/**
 * `POST /v1/images/imagine`: generates a 1024 x 1024 image from a prompt. The generated bytes are
 * brought to 1024 x 1024 JPEG, then ingested like an upload (limits, re-encode, the test-key mark).
 * Bytes the codec cannot read are the provider's fault (`MODEL_BAD_RESPONSE`, 502), never a 422.
 */
export async function imagineImage(
  context: PipelineContext,
  models: ModelPorts,
  caller: Caller,
  input: ParsedBody<typeof imagineSchema>,
): Promise<Image> {
  const { body } = input;
  const { provider, model } = resolveModel(models.generator, "imagine", body.model, DEFAULT_MODELS.imagine);
  const generated = await provider
    .generate(
      {
        model,
        prompt: body.prompt,
        negativePrompt: body.negative_prompt,
        seed: body.seed,
        width: IMAGINE_SIZE,
        height: IMAGINE_SIZE,
      },
      { signal: input.signal },
    )
    .catch((error: unknown) => upstreamFailure(error, model));
  const badImage = (cause?: unknown) =>
    new ImagePipelineError(
      ErrorCodes.MODEL_BAD_RESPONSE,
      `The model ${model} did not return a usable image.`,
      {
        cause,
      },
    );
  if (generated.byteLength === 0 || sniffImageFormat(generated) === null) throw badImage();
  const header = await context.codec.probe(generated).catch(() => null);
  if (header === null || header.width * header.height > context.limits.maxInputPixels) throw badImage();
  // One decode and one encode: the square crop (when the model made another size) runs in the
  // ingestion's own codec job, with the test mark, straight to JPEG.
  const square = header.width === IMAGINE_SIZE && header.height === IMAGINE_SIZE;
  const steps: TransformStep[] = square
    ? []
    : [
        {
          type: "resize",
          width: IMAGINE_SIZE,
          height: IMAGINE_SIZE,
          fit: "cover",
          position: "center",
          background: { r: 0, g: 0, b: 0, alpha: 1 },
        },
      ];
  try {
    return await ingestImage(context, caller, { name: body.name, image: generated }, "image", {
      steps,
      format: "jpeg",
    });
  } catch (error) {
    if (
      isImagePipelineError(error) &&
      (error.code === ErrorCodes.INVALID_IMAGE || error.code === ErrorCodes.IMAGE_TOO_LARGE)
    ) {
      throw badImage(error);
    }
    throw error;
  }
}

/** `POST /v1/images/{image_id}/visualize`: answers a prompt about the image (`{response}`). */
export async function visualizeImage(
  context: PipelineContext,
  models: ModelPorts,
  caller: Caller,
  input: ParsedImageBody<typeof visualizeSchema>,
): Promise<{ response: string }> {
  const { imageId: image_id, body } = input;
  const { provider, model } = resolveModel(models.vision, "visualize", body.model, DEFAULT_MODELS.visualize);
  const image = await prepareModelImage(
    context,
    caller,
    image_id,
    provider.maxImageSide?.(model) ?? DEFAULT_MODEL_IMAGE_SIDE,
  );
  const response = await provider
    .describe({ model, image, prompt: body.prompt }, { signal: input.signal })
    .catch((error: unknown) => upstreamFailure(error, model));
  return { response };
}

/**
 * `POST /v1/images/{image_id}/classify` (body `{}` or none). Test keys get the masked P9 result
 * after the image check, without any model call (and without needing a provider).
 */
export async function classifyImage(
  context: PipelineContext,
  models: ModelPorts,
  caller: Caller,
  input: ParsedImageBody<typeof classifySchema>,
): Promise<Classification> {
  const image_id = input.imageId;
  if (caller.keyKind === "test") {
    await loadOwnedImage(context, caller, image_id);
    return structuredClone(MASKED_CLASSIFICATION);
  }
  const { provider, model } = resolveModel(models.classifier, "classify", undefined, undefined);
  const image = await prepareModelImage(
    context,
    caller,
    image_id,
    provider.maxImageSide?.(model) ?? DEFAULT_MODEL_IMAGE_SIDE,
  );
  return provider
    .classify({ model, image }, { signal: input.signal })
    .catch((error: unknown) => upstreamFailure(error, model));
}

/**
 * `POST /v1/images/{image_id}/extract-formatted-text`: `{format, content}`. Not available to test
 * keys (P10: 403 `FEATURE_NOT_AVAILABLE`, checked after validation and before any model call).
 */
export async function extractFormattedText(
  context: PipelineContext,
  models: ModelPorts,
  caller: Caller,
  input: ParsedImageBody<typeof extractFormattedTextSchema>,
): Promise<{ format: TextFormat; content: string }> {
  const { imageId: image_id, body } = input;
  if (caller.keyKind === "test") {
    throw new ImagePipelineError(
      ErrorCodes.FEATURE_NOT_AVAILABLE,
      "extract-formatted-text is not available in test mode; use a live key.",
    );
  }
  const { provider, model } = resolveModel(
    models.textExtractor,
    "extract-formatted-text",
    undefined,
    undefined,
  );
  const image = await prepareModelImage(
    context,
    caller,
    image_id,
    provider.maxImageSide?.(model) ?? DEFAULT_MODEL_IMAGE_SIDE,
    provider.lossless === true,
  );
  // An embedded engine reads the pixels in this process tree: it reserves what it needs from the
  // node's memory budget once it knows (the page it will read), as codec jobs do.
  const budget = context.memory;
  const reserveMemory =
    budget === undefined ? undefined : (bytes: number) => budget.reserve(bytes, "image", input.signal);
  const content = await provider
    .extract({ model, image, format: body.format }, { signal: input.signal, reserveMemory })
    .catch((error: unknown) => upstreamFailure(error, model));
  return { format: body.format, content };
}
