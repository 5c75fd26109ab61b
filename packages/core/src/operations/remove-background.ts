import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "../errors.js";
import type { Image } from "../image.js";
import type { BackgroundRemover } from "../ports/background-remover.js";
import type { removeBackgroundSchema } from "../schemas.js";
import { TRANSPARENT } from "../transforms/color.js";
import {
  assertCodecSupports,
  type Caller,
  loadImageBytes,
  loadOwnedImage,
  type PipelineContext,
  producedImageSteps,
  runCodec,
  storeNewImage,
  withMemory,
} from "./context.js";
import type { ImageBodyInput, ParsedImageBody } from "./inputs.js";

/** Input of {@link removeImageBackground}: the image id and `{}`, `{name}` or no body at all. */
export type RemoveBackgroundInput = ImageBodyInput<typeof removeBackgroundSchema>;

/**
 * `POST /v1/images/{image_id}/remove-background`: a new PNG image of the same size whose background
 * is transparent. The remover's output is checked (a PNG of the source's size) and re-encoded by the
 * codec, which also stamps the test mark for test keys. Without a remover: `MODEL_NOT_CONFIGURED`.
 */
export async function removeImageBackground(
  context: PipelineContext,
  remover: BackgroundRemover | undefined,
  caller: Caller,
  input: ParsedImageBody<typeof removeBackgroundSchema>,
): Promise<Image> {
  const { body } = input;
  const source = await loadOwnedImage(context, caller, input.imageId);
  if (remover === undefined) {
    throw new ImagePipelineError(
      ErrorCodes.MODEL_NOT_CONFIGURED,
      "remove-background is not available on this server: no background remover is configured.",
    );
  }
  const size = { width: source.width, height: source.height };
  const steps = producedImageSteps(context, caller, size);
  // Checked before the model runs: a codec that cannot write the result must not cost a model call.
  assertCodecSupports(context, steps, "png");
  // The remover holds a decoded copy and a mask of the image, then the codec re-encodes the cut-out:
  // the job reserves twice a plain job's estimate in the node's memory budget (models keep their
  // own, constant, weights outside it).
  const job = { input: size, steps, field: "image", signal: input.signal, factor: 2, format: "png" as const };
  const encoded = await withMemory(context, job, async () => {
    const data = await loadImageBytes(context, source);
    let cutout: Uint8Array;
    try {
      cutout = await remover.remove({ image: data, ...size }, { signal: input.signal });
    } catch (error) {
      if (isImagePipelineError(error)) throw error;
      throw new ImagePipelineError(ErrorCodes.INTERNAL, `The background remover ${remover.name} failed.`, {
        cause: error,
      });
    }
    const header = await context.codec.probe(cutout).catch(() => null);
    if (
      header === null ||
      header.format !== "png" ||
      header.width !== size.width ||
      header.height !== size.height
    ) {
      throw new ImagePipelineError(
        ErrorCodes.INTERNAL,
        `The background remover ${remover.name} did not return a ${size.width} x ${size.height} PNG.`,
      );
    }
    // Without a test mark there is nothing to add: the remover's PNG (checked above) is stored as
    // it is, not decoded and encoded a second time.
    if (steps.length === 0) {
      return { data: cutout, format: "png" as const, width: size.width, height: size.height };
    }
    return runCodec(context, {
      input: cutout,
      steps,
      output: { format: "png", quality: context.encodeQuality, flattenBackground: TRANSPARENT },
      onError: "stored",
      capabilitiesChecked: true,
    });
  });
  return storeNewImage(context, caller, encoded, body.name ?? source.name);
}
