/**
 * The codec kit: what every {@link ImageCodec} must check of a transform request, written once
 * beside the port instead of in each adapter (and again in the core, and again in a worker
 * thread). Adapters build their codec with {@link defineImageCodec}; the core runs the check once
 * per job and then calls the adapter's own transform without repeating it.
 */
import { ErrorCodes, ImagePipelineError } from "./errors.js";
import { FORMAT_LIST, sniffImageFormat } from "./image.js";
import type { ImageCodec, TransformRequest } from "./ports/image-codec.js";

const UNCHECKED = Symbol("pixport.codec.uncheckedTransform");

type Checked = ImageCodec & { [UNCHECKED]?: ImageCodec["transform"] };

const describeValue = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value;

/**
 * The capability check: every step type and the output format must be the codec's
 * (`UNSUPPORTED_OPERATION` otherwise). Needs no bytes, so the core runs it before loading any.
 */
export function checkCodecCapabilities(
  codec: Pick<ImageCodec, "name" | "capabilities">,
  steps: readonly { type: string }[],
  format: unknown,
): void {
  const { capabilities, name } = codec;
  const step = steps.find((candidate) => !capabilities.steps.includes(candidate?.type as never));
  if (step !== undefined) {
    throw new ImagePipelineError(
      ErrorCodes.UNSUPPORTED_OPERATION,
      `The ${name} codec cannot run the ${String(step?.type)} step.`,
    );
  }
  if (!capabilities.outputFormats.includes(format as never)) {
    throw new ImagePipelineError(
      ErrorCodes.UNSUPPORTED_OPERATION,
      `The ${name} codec cannot encode ${String(format)} (it writes ${capabilities.outputFormats.join(", ")}).`,
    );
  }
}

/** The byte guard: the input starts like an image of a known format (`INVALID_IMAGE` otherwise). */
export function checkInputBytes(input: Uint8Array): void {
  if (sniffImageFormat(input) === null) {
    throw new ImagePipelineError(ErrorCodes.INVALID_IMAGE, `The input is not a ${FORMAT_LIST} image.`);
  }
}

/**
 * Everything a codec checks of a request before any work: its shape (bytes, not a path; a list of
 * steps; overlay layers as bytes: `TypeError`), {@link checkCodecCapabilities} and
 * {@link checkInputBytes}.
 */
export function checkTransformRequest(
  codec: Pick<ImageCodec, "name" | "capabilities">,
  request: TransformRequest,
): void {
  if (typeof request !== "object" || request === null) {
    throw new TypeError(`Expected object for request, received ${describeValue(request)}`);
  }
  if (!(request.input instanceof Uint8Array)) {
    throw new TypeError(`Expected Uint8Array for input, received ${describeValue(request.input)}`);
  }
  if (!Array.isArray(request.steps)) {
    throw new TypeError(`Expected array for steps, received ${describeValue(request.steps)}`);
  }
  for (const step of request.steps) {
    if (step?.type !== "overlay") continue;
    for (const [index, layer] of step.layers.entries()) {
      if (!(layer?.input instanceof Uint8Array)) {
        throw new TypeError(
          `Expected Uint8Array for layers[${index}].input, received ${describeValue(layer?.input)}`,
        );
      }
    }
  }
  checkCodecCapabilities(codec, request.steps, request.output?.format);
  checkInputBytes(request.input);
}

/**
 * Builds an {@link ImageCodec} from an adapter's implementation: its `transform` runs
 * {@link checkTransformRequest} first, so the adapter's own transform receives checked requests
 * only and need not repeat the checks. The core calls the adapter's transform directly once it has
 * checked a job itself, so each check runs once per job.
 *
 * @example
 * ```ts
 * export const myCodec = defineImageCodec({
 *   name: "mine",
 *   capabilities: { inputFormats: ["png"], outputFormats: ["png"], steps: ["resize"] },
 *   probe: async (bytes) => readPngHeader(bytes),
 *   transform: async (request) => resizePng(request), // receives checked requests only
 * });
 * ```
 */
export function defineImageCodec<Codec extends ImageCodec>(implementation: Codec): Codec {
  const transform = implementation.transform.bind(implementation);
  const codec: Checked = {
    ...implementation,
    transform(request: TransformRequest) {
      try {
        checkTransformRequest(implementation, request);
      } catch (error) {
        return Promise.reject(error);
      }
      return transform(request);
    },
  };
  Object.defineProperty(codec, UNCHECKED, { value: transform, enumerable: false });
  return codec as Codec;
}

/**
 * The adapter's own transform of a codec made by {@link defineImageCodec} (for a caller that has
 * already run {@link checkTransformRequest}, the core), else the codec's public transform.
 */
export function uncheckedTransform(codec: ImageCodec): ImageCodec["transform"] {
  return (codec as Checked)[UNCHECKED] ?? ((request) => codec.transform(request));
}
