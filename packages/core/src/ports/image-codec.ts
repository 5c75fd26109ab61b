import type { ImageFormat } from "../image.js";
import type { OutputOptions, TransformStep, TransformStepType } from "../transforms/steps.js";

/** What a codec can do. The core checks it before doing any work. */
export interface CodecCapabilities {
  /** Formats the codec decodes. */
  inputFormats: readonly ImageFormat[];
  /** Formats the codec encodes. */
  outputFormats: readonly ImageFormat[];
  /** Transform steps the codec runs. */
  steps: readonly TransformStepType[];
}

/** Dimensions read from an image header, after EXIF orientation is applied. */
export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

/** An encoded result. */
export interface EncodedImage {
  data: Uint8Array;
  format: ImageFormat;
  width: number;
  height: number;
}

/** Decoder safety limits, enforced by the codec while decoding as a second line of defence. */
export interface DecodeLimits {
  /** Maximum width x height of the decoded input. */
  maxInputPixels: number;
  /**
   * Longest time the whole job may take, ms. Past it the codec stops the work for real (not just
   * the wait) and rejects with `PROCESSING_TIMEOUT`. Absent: no deadline.
   */
  timeoutMs?: number;
}

/** Input of {@link ImageCodec.transform}. */
export interface TransformRequest {
  /** Encoded input bytes. Never a path or URL. */
  input: Uint8Array;
  /** Validated, complete steps, run in order in one decode/encode. May be empty (re-encode). */
  steps: readonly TransformStep[];
  output: OutputOptions;
  limits: DecodeLimits;
}

/**
 * Decodes, transforms and encodes images.
 *
 * Semantics every adapter must keep (checked by the ImageCodec conformance suite):
 * - Inputs are bytes only (`Uint8Array`); a codec never interprets input as a path or URL.
 * - `probe` reads the header only, without decoding pixels, and returns `null` when the bytes are
 *   not an image of one of `capabilities.inputFormats`. Reported dimensions are after EXIF
 *   orientation (a portrait photo stored sideways reports portrait dimensions).
 * - `transform` applies EXIF orientation, runs the steps in order, strips metadata (EXIF, GPS, XMP)
 *   and encodes to `output`. Corrupt or truncated input, or input over `limits`, rejects with
 *   `ImagePipelineError` code `INVALID_IMAGE` or `IMAGE_TOO_LARGE`, never with a partial image.
 * - A step or format outside the capabilities rejects with `UNSUPPORTED_OPERATION`.
 */
export interface ImageCodec {
  readonly name: string;
  readonly capabilities: CodecCapabilities;
  probe(input: Uint8Array): Promise<ImageHeader | null>;
  transform(request: TransformRequest): Promise<EncodedImage>;
}
