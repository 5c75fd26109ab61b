import { checkCodecCapabilities, checkInputBytes, uncheckedTransform } from "../codec-kit.js";
import { ErrorCodes, ImagePipelineError, isImagePipelineError, validationError } from "../errors.js";
import {
  ANIMATED_FORMATS,
  acceptedFormats,
  type ImageFormat,
  type ImageRecord,
  sniffImageFormat,
} from "../image.js";
import { readImageHeader } from "../image-header.js";
import { type Limits, outputBytesIssue, outputPixelsIssue } from "../limits.js";
import { estimateJobBytes } from "../policies/memory-budget.js";
import type { EncodedImage, ImageCodec, ImageHeader } from "../ports/image-codec.js";
import { type Size, stepOutputSize } from "../transforms/plan.js";
import type { OutputOptions, TransformStep } from "../transforms/steps.js";

import { loadImageBytes, type PipelineContext } from "./context.js";

/*
 * The codec runner: every codec job of the core (uploads, transforms, variants, model copies) goes
 * through `runCodec`, and every new input through `probeInput`, so the capability check, the
 * memory budget, the byte guard, the limits and the mapping of failures live in one place.
 */

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
    /** The format the job encodes to (its encoder's working set is part of the estimate); none when absent. */
    format?: ImageFormat | undefined;
    /** Whether the encode searches its quality (`output.autoQuality`: the search's copies count too). */
    autoQuality?: boolean | undefined;
  },
  task: () => Promise<T>,
): Promise<T> {
  if (context.memory === undefined) return task();
  const bytes = Math.ceil(
    estimateJobBytes(
      job.input,
      job.steps,
      Math.max(1, job.frames ?? 1),
      job.format,
      job.autoQuality === true,
    ) * Math.max(1, job.factor ?? 1),
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
  /**
   * The identity of bytes given as `input` (the codec's `sourceKey`: the same key promises the
   * same bytes), so the codec can keep them decoded; a stored image's is its blob key.
   */
  sourceKey?: string;
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
  // The output limit of the format, before the budget and any byte loaded (callers that know a
  // better field to blame check it first).
  const start = job.memory?.size ?? (job.input instanceof Uint8Array ? undefined : job.input);
  if (start !== undefined) {
    const final = job.steps.reduce<Size>((size, step) => stepOutputSize(step, size), start);
    const field = job.memory?.field ?? "image";
    const issue = outputPixelsIssue(context.limits, job.output.format, final, field, job.memory?.frames);
    if (issue !== null) throw validationError([issue], ErrorCodes.OUTPUT_TOO_LARGE);
  }
  const run = async () => {
    const input = job.input instanceof Uint8Array ? job.input : await loadImageBytes(context, job.input);
    try {
      checkInputBytes(input);
      return await uncheckedTransform(context.codec)({
        input,
        steps: job.steps,
        output: job.output,
        limits: { maxInputPixels: context.limits.maxInputPixels, timeoutMs: context.limits.maxJobMs },
        ...(job.input instanceof Uint8Array
          ? job.sourceKey === undefined
            ? {}
            : { sourceKey: job.sourceKey }
          : { sourceKey: job.input.blobKey }),
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
  // The encoded size is known only now: a result over its format's byte limit is never stored.
  const checked = async () => {
    const encoded = await run();
    const field = job.memory?.field ?? "image";
    const issue = outputBytesIssue(context.limits, encoded.format, encoded.data.byteLength, field);
    if (issue !== null) throw validationError([issue], ErrorCodes.OUTPUT_TOO_LARGE);
    return encoded;
  };
  const memory = job.memory;
  if (memory === undefined) return checked();
  return withMemory(
    context,
    {
      input: memory.size,
      steps: job.steps,
      field: memory.field,
      signal: memory.signal,
      frames: memory.frames,
      factor: memory.factor,
      format: job.output.format,
      autoQuality: job.output.autoQuality !== undefined,
    },
    checked,
  );
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
