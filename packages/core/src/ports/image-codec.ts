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
  /**
   * Formats whose animation the codec keeps (every frame, the delays and the loop count) when the
   * output is one of them too. An animated input of a format in `inputFormats` but not here is
   * refused by the core with `UNSUPPORTED_OPERATION` (never silently cut to one frame). Absent: none.
   */
  animation?: readonly ImageFormat[];
  /** Smart-crop strategies the codec offers for resize `position` with `fit: cover`. Absent: none. */
  smartCrop?: readonly SmartCropStrategy[];
  /**
   * Formats whose quality the codec can choose itself (`output.autoQuality`): it measures its own
   * encodes against the rendered pixels and keeps the lowest quality within the SSIM target, in at
   * most `AUTO_QUALITY_PROBES` measured encodes plus the final one. The core sends `autoQuality`
   * only for these formats. Absent: none.
   */
  autoQuality?: readonly ImageFormat[];
}

/** Content-aware crop strategies (`entropy`: the busiest region; `attention`: the most salient). */
export type SmartCropStrategy = "attention" | "entropy";

/** A small RGBA copy of an image's first frame, and facts read on the way. */
export interface ImageSample {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, rows top to bottom, not premultiplied. */
  data: Uint8Array;
  /** Some pixel of the full image (not just the sample) is not fully opaque. */
  hasAlpha: boolean;
  /** Frames of the animation, 1 for a still image. */
  frames: number;
}

/** Dimensions read from an image header, after EXIF orientation is applied. */
export interface ImageHeader {
  format: ImageFormat;
  /** Size of one frame (or of the first page of a TIFF). */
  width: number;
  height: number;
  /**
   * Frames of an animation or pages of a multi-page TIFF; absent or 1 for a still image. The core
   * applies its pixel limits to frames x width x height and `limits.maxFrames` to this count.
   */
  frames?: number;
}

/** An encoded result. */
export interface EncodedImage {
  data: Uint8Array;
  format: ImageFormat;
  /** Size of one frame. */
  width: number;
  height: number;
  /** Frames written (absent or 1: a still image). */
  frames?: number;
  /** The quality an automatic quality (`output.autoQuality`) chose; absent otherwise. */
  quality?: number;
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
  /**
   * Identity of the input bytes: two requests with one key promise the same bytes (the core sets
   * the stored image's blob key, as stored images never change, and an origin original's digest). A codec may keep the decoded pixels
   * under it and start later requests from them instead of decoding again; it must still answer as
   * the semantics below say. Absent: input bytes with no identity (an upload, a fetched URL).
   */
  sourceKey?: string;
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
 *   and encodes to `output`. An animated input (a format in `capabilities.animation`) written to
 *   such a format keeps every frame, each frame's delay and the loop count, every step applied to
 *   every frame on one canvas; written to a still format it keeps the first frame. Multi-page
 *   TIFF keeps the first page. Corrupt or truncated input, or input over `limits`, rejects with
 *   `ImagePipelineError` code `INVALID_IMAGE` or `IMAGE_TOO_LARGE`, never with a partial image.
 * - A step or format outside the capabilities rejects with `UNSUPPORTED_OPERATION`.
 */
export interface ImageCodec {
  readonly name: string;
  readonly capabilities: CodecCapabilities;
  probe(input: Uint8Array): Promise<ImageHeader | null>;
  transform(request: TransformRequest): Promise<EncodedImage>;
  /**
   * Decodes the first frame to a copy that fits `maxSide` x `maxSide` (aspect kept, EXIF orientation
   * applied) for placeholders and colour facts. Optional: without it, metadata has no
   * `dominant_color` or hashes.
   */
  sample?(input: Uint8Array, maxSide: number, limits: DecodeLimits): Promise<ImageSample>;
}
