import type { CodecCapabilities, ImageCodec, ImageFormat } from "@pixport/core";
import { IMAGE_FORMATS } from "@pixport/core";
import {
  ANIMATED_FORMATS,
  defineImageCodec,
  SourceCache,
  TRANSFORM_STEP_TYPES,
} from "@pixport/core/adapter-kit";
import sharp from "sharp";
import { AUTO_QUALITY_FORMATS } from "./auto-quality.js";
import { probe } from "./header.js";
import type { DecodedSource } from "./kept-source.js";
import { parseSharpImageCodecOptions, type SharpImageCodecOptions } from "./options.js";
import { sample } from "./sample.js";
import { transform } from "./transform.js";

const FORMATS: readonly ImageFormat[] = IMAGE_FORMATS;

const CAPABILITIES: CodecCapabilities = Object.freeze({
  inputFormats: FORMATS,
  outputFormats: FORMATS,
  steps: TRANSFORM_STEP_TYPES,
  animation: ANIMATED_FORMATS,
  smartCrop: ["attention", "entropy"] as const,
  autoQuality: AUTO_QUALITY_FORMATS,
});

/** The sharp codec: an {@link ImageCodec} that also tells how full its decoded-source cache is. */
export interface SharpImageCodec extends ImageCodec {
  /**
   * The decoded-source cache (`sourceCacheBytes`): bytes of decoded pixels held now, and the bound
   * (0: off). Read at any time, e.g. for a metrics gauge.
   */
  readonly sourceCache: { readonly bytes: number; readonly maxBytes: number };
}

/** The only libvips loaders left enabled by `blockUntrustedLoaders`. */
const ALLOWED_LOADERS = [
  "VipsForeignLoadJpegBuffer",
  "VipsForeignLoadPngBuffer",
  "VipsForeignLoadWebpBuffer",
  "VipsForeignLoadGifBuffer",
  "VipsForeignLoadNsgifBuffer",
  "VipsForeignLoadTiffBuffer",
  "VipsForeignLoadHeifBuffer",
];

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
export function createSharpCodec(options: SharpImageCodecOptions = {}): SharpImageCodec {
  const settings = parseSharpImageCodecOptions(options);
  if (settings.concurrency !== undefined) sharp.concurrency(settings.concurrency);
  if (settings.cache !== undefined) sharp.cache(settings.cache);
  if (settings.blockUntrustedLoaders) {
    sharp.block({ operation: ["VipsForeignLoad"] });
    sharp.unblock({ operation: ALLOWED_LOADERS });
  }
  const sources =
    settings.sourceCacheBytes > 0 ? new SourceCache<DecodedSource>(settings.sourceCacheBytes) : undefined;
  const cacheStats = {
    get bytes() {
      return sources?.bytes ?? 0;
    },
    maxBytes: settings.sourceCacheBytes,
  };
  // The codec kit checks each request (shape, capabilities, the byte guard) before transform runs.
  return defineImageCodec({
    name: "sharp",
    capabilities: CAPABILITIES,
    sourceCache: cacheStats,
    probe: (input) => probe(input),
    transform: (request) => transform(request, settings, sources),
    sample: (input, maxSide, limits) => sample(input, maxSide, limits, settings),
  });
}
