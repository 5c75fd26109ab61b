import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";
import type {
  CodecCapabilities,
  DecodeLimits,
  EncodedImage,
  ImageCodec,
  ImageFormat,
  ImageHeader,
  ImageSample,
  TransformRequest,
} from "@pixport/core";
import { ErrorCodes, IMAGE_FORMATS, ImagePipelineError, sniffImageFormat } from "@pixport/core";
import type { OverlayLayer, TransformStep } from "@pixport/core/adapter-kit";
import {
  defineImageCodec,
  imageTooLarge,
  NOT_KEPT,
  SourceCache,
  TRANSFORM_STEP_TYPES,
  unsupportedOperation,
} from "@pixport/core/adapter-kit";
import { AUTO_QUALITY_FORMATS, encodeAutoQuality } from "./auto-quality.js";
import { type Bitmap, crop, isOpaque, mirror } from "./bitmap.js";
import { checkHeader, decode, decodeFrames, encodeFrames } from "./codecs.js";
import { asBuffer } from "./errors.js";
import { readHeader } from "./header.js";
import { type JimpImageCodecOptions, parseJimpImageCodecOptions } from "./options.js";
import { JimpWorkerPool } from "./pool.js";
import { blur } from "./steps/blur.js";
import { modulate } from "./steps/modulate.js";
import { drawOver } from "./steps/overlay.js";
import { resize, scale } from "./steps/resize.js";
import { rotate } from "./steps/rotate.js";

const FORMATS: readonly ImageFormat[] = IMAGE_FORMATS;

const CAPABILITIES: CodecCapabilities = Object.freeze({
  inputFormats: FORMATS,
  outputFormats: FORMATS,
  steps: TRANSFORM_STEP_TYPES,
  // jsquash's WebP build has no animation API: animated WebP is refused by the core (422).
  animation: ["gif"] as const,
  smartCrop: ["entropy", "attention"] as const,
  autoQuality: AUTO_QUALITY_FORMATS,
});

/**
 * Creates an {@link ImageCodec} on jimp: pure JavaScript (jpeg-js and pngjs through jimp's format
 * plugins, jimp's resampler) plus libwebp compiled to WASM for WebP, so it runs where sharp's
 * native binaries cannot be installed. Same semantics as the sharp codec, at jimp's speed.
 *
 * - Reads and writes jpeg, png and webp and runs every transform step.
 * - Only bytes reach the decoders: a non-`Uint8Array` input throws a `TypeError` (jimp reads a
 *   string as a path or URL), and bytes whose magic numbers are not jpeg, png or webp are refused
 *   with `INVALID_IMAGE`.
 * - Dimensions come from the header, and an input over `limits.maxInputPixels` (else
 *   `options.maxInputPixels`) is refused with `IMAGE_TOO_LARGE` before any pixel is decoded, so a
 *   decompression bomb costs a header read. Corrupt or truncated input is `INVALID_IMAGE`, never a
 *   partial image. EXIF orientation is applied and metadata is stripped.
 * - Inputs jimp cannot decode although they are valid (arithmetic-coded or 12-bit JPEG, animated
 *   WebP) reject with `UNSUPPORTED_OPERATION`, as does a step or format outside `capabilities`.
 * - Transforms run in worker threads (`workers`, default min(4, cores)): jimp is synchronous
 *   JavaScript, and on the calling thread a large image would block the event loop for its whole
 *   transform. `workers: 0` runs them on the calling thread. `probe` reads headers in place.
 *
 * @example
 * ```ts
 * import { createImagePipeline } from "@pixport/core";
 * import { createJimpCodec } from "@pixport/codec-jimp";
 *
 * const codec = createJimpCodec({ maxInputPixels: 25_000_000 });
 * const pipeline = createImagePipeline({ codec, blobStore, images, keys, publisher });
 * ```
 */
export function createJimpCodec(options: JimpImageCodecOptions = {}): JimpCodec {
  const settings = parseJimpImageCodecOptions(options);
  const workers = settings.workers ?? Math.max(1, Math.min(4, availableParallelism()));
  if (workers === 0) {
    const kept =
      settings.sourceCacheBytes > 0 ? new SourceCache<Bitmap>(settings.sourceCacheBytes) : undefined;
    return defineImageCodec({
      name: "jimp",
      capabilities: CAPABILITIES,
      probe: async (input: Uint8Array) => probe(input),
      transform: (request: TransformRequest) => transformInThread(request, settings.maxInputPixels, kept),
      sample: (input: Uint8Array, maxSide: number, limits: DecodeLimits) =>
        sampleInThread(input, maxSide, pixelCap(limits.maxInputPixels, settings.maxInputPixels)),
      close: async () => {},
    });
  }
  const script =
    settings.workerScript === undefined
      ? WORKER_SCRIPT
      : settings.workerScript instanceof URL
        ? settings.workerScript
        : pathToFileURL(settings.workerScript);
  if (!existsSync(script)) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `The jimp codec's worker script ${fileURLToPath(script)} is missing: build @pixport/codec-jimp (pnpm build), pass workerScript, or pass workers: 0.`,
    );
  }
  const pool = new JimpWorkerPool(workers, script, Math.floor(settings.sourceCacheBytes / workers));
  // The codec kit checks each request on this thread (so nothing odd is cloned to a worker), once:
  // the worker runs checked requests only.
  return defineImageCodec({
    name: "jimp",
    capabilities: CAPABILITIES,
    probe: async (input: Uint8Array) => probe(input),
    transform: (request: TransformRequest) => pool.run(request, settings.maxInputPixels),
    sample(input: Uint8Array, maxSide: number, limits: DecodeLimits) {
      asBuffer(input, "input");
      return pool.sample(
        input,
        maxSide,
        pixelCap(limits.maxInputPixels, settings.maxInputPixels),
        limits.timeoutMs,
      );
    },
    close: () => pool.close(),
  });
}

function pixelCap(requested: number | undefined, fallback: number): number {
  return typeof requested === "number" && Number.isFinite(requested) && requested > 0
    ? Math.floor(requested)
    : fallback;
}

/** The jimp codec; `close()` stops its worker threads (they never hold the process open). */
export interface JimpCodec extends ImageCodec {
  close(): Promise<void>;
}

/**
 * The worker entry, always the built one: `dist/worker.js` next to `dist/index.js`, and from the
 * sources (tests) the same file, so `pnpm build` must run before tests of edited jimp code.
 */
const WORKER_SCRIPT = new URL("../dist/worker.js", import.meta.url);

function probe(input: Uint8Array): ImageHeader | null {
  const bytes = asBuffer(input, "input");
  const format = sniffImageFormat(bytes);
  // Header only, with no pixel cap: a bomb reports its real size and the caller refuses it. A
  // valid file jimp cannot decode (e.g. an animated WebP) is reported too; transform says why.
  const header = format === null ? null : readHeader(bytes, format);
  if (header === null) return null;
  const turned = header.orientation >= 5;
  return {
    format: header.format,
    width: turned ? header.height : header.width,
    height: turned ? header.width : header.height,
    ...(header.frames !== undefined && header.frames > 1 ? { frames: header.frames } : {}),
  };
}

/**
 * The whole transform on the calling thread (the worker threads run this too), starting from the
 * decoded source kept in `keptSources` when the request's `sourceKey` has one.
 */
export async function transformInThread(
  request: TransformRequest,
  defaultMaxPixels: number,
  keptSources?: SourceCache<Bitmap>,
): Promise<EncodedImage> {
  // A checked request (defineImageCodec on the main thread, or the core's runCodec).
  const input = asBuffer(request.input, "input");
  const requested = request.limits?.maxInputPixels;
  const maxPixels =
    typeof requested === "number" && Number.isFinite(requested) && requested > 0
      ? Math.floor(requested)
      : defaultMaxPixels;

  // Overlay headers are checked before the base is decoded, so no work is wasted on a doomed request.
  for (const step of request.steps) {
    if (step.type !== "overlay") continue;
    for (const [index, layer] of step.layers.entries()) {
      checkHeader(asBuffer(layer.input, `layers[${index}].input`), maxPixels, `Overlay ${index}`);
    }
  }

  // A kept source is one still frame (steps never change their input bitmap); GIF output, whose
  // encoder may work on its frames, always decodes. A decode made for the cache and not kept (an
  // animation) serves this request, so no use decodes twice.
  let decodedHere: Awaited<ReturnType<typeof decodeFrames>> | undefined;
  const kept =
    keptSources === undefined || request.sourceKey === undefined || request.output.format === "gif"
      ? null
      : await keptSources
          .get(
            request.sourceKey,
            async () => {
              decodedHere = await decodeFrames(input, maxPixels, "The input");
              const [only] = decodedHere.frames;
              return decodedHere.frames.length === 1 && only !== undefined ? only : NOT_KEPT;
            },
            keptUse(input),
          )
          // A failed decode for the cache falls back to the usual path, which answers for this request.
          .catch(() => null);
  const animation =
    kept !== null && kept.width * kept.height <= maxPixels
      ? { frames: [kept], delays: [0], loop: null }
      : (decodedHere ?? (await decodeFrames(input, maxPixels, "The input")));
  // An animation written to GIF keeps every frame; to any other format, the first.
  const keep = animation.frames.length > 1 && request.output.format === "gif";
  const frames = keep ? animation.frames : animation.frames.slice(0, 1);
  const results: Bitmap[] = [];
  for (let bitmap of frames) {
    for (const step of request.steps) bitmap = await runStep(bitmap, step, maxPixels);
    results.push(bitmap);
  }
  const first = results[0]!;
  const { output } = request;
  const auto =
    output.autoQuality !== undefined &&
    results.length === 1 &&
    (AUTO_QUALITY_FORMATS as readonly string[]).includes(output.format)
      ? await encodeAutoQuality(first, output, output.autoQuality)
      : undefined;
  const data = auto?.data ?? (await encodeFrames({ ...animation, frames: results }, output));
  return {
    data,
    format: output.format,
    width: first.width,
    height: first.height,
    ...(results.length > 1 ? { frames: results.length } : {}),
    ...(auto === undefined ? {} : { quality: auto.quality }),
  };
}

/**
 * What a use of the cache tells about the source (its RGBA bitmap's bytes, from the header, for the
 * admission rule); nothing when the header does not read (the decode then answers for it).
 */
function keptUse(input: Buffer): { bytes?: number } {
  const format = sniffImageFormat(input);
  const header = format === null ? null : readHeader(input, format);
  return header === null ? {} : { bytes: header.width * header.height * 4 };
}

/** {@link ImageCodec.sample} on this thread (the workers run it too). */
export async function sampleInThread(
  input: Uint8Array,
  maxSide: number,
  maxPixels: number,
): Promise<ImageSample> {
  const bytes = asBuffer(input, "input");
  const header = checkHeader(bytes, maxPixels, "The input");
  const bitmap = await decode(bytes, maxPixels, "The input");
  const side = Math.max(1, Math.floor(maxSide));
  const factor = Math.min(1, side / bitmap.width, side / bitmap.height);
  const small = scale(
    bitmap,
    Math.max(1, Math.round(bitmap.width * factor)),
    Math.max(1, Math.round(bitmap.height * factor)),
  );
  return {
    width: small.width,
    height: small.height,
    data: small.data,
    hasAlpha: !isOpaque(bitmap),
    frames: header.format === "gif" || header.format === "webp" ? (header.frames ?? 1) : 1,
  };
}

async function runStep(bitmap: Bitmap, step: TransformStep, maxPixels: number): Promise<Bitmap> {
  switch (step.type) {
    case "mirror":
      return mirror(
        bitmap,
        step.mode === "horizontal" || step.mode === "both",
        step.mode === "vertical" || step.mode === "both",
      );
    case "resize":
      return resize(bitmap, step);
    case "crop":
      return crop(bitmap, step.left, step.top, step.width, step.height);
    case "rotate":
      return rotate(bitmap, step.angle, step.background);
    case "modulate":
      return modulate(bitmap, step);
    case "blur":
      return blur(bitmap, Math.min(1000, step.sigma));
    case "overlay": {
      // Drawn in place: work on a copy so the caller's (or a cached) bitmap is never changed.
      const result: Bitmap = { ...bitmap, data: Buffer.from(bitmap.data) };
      for (const [index, layer] of step.layers.entries()) {
        await drawLayer(result, layer, index, maxPixels);
      }
      return result;
    }
    default: {
      const unknown: never = step;
      throw unsupportedOperation(
        `The jimp codec cannot run the ${String((unknown as { type: string }).type)} step.`,
      );
    }
  }
}

async function drawLayer(base: Bitmap, layer: OverlayLayer, index: number, maxPixels: number): Promise<void> {
  const width = Math.max(1, Math.round(layer.width));
  const height = Math.max(1, Math.round(layer.height));
  const left = Math.round(layer.left);
  const top = Math.round(layer.top);
  const opacity = Number.isFinite(layer.opacity) ? Math.min(1, Math.max(0, layer.opacity)) : 1;
  const tilesX = layer.repeat === "repeat" || layer.repeat === "repeat-x";
  const tilesY = layer.repeat === "repeat" || layer.repeat === "repeat-y";
  const visibleX = tilesX || (left < base.width && left + width > 0);
  const visibleY = tilesY || (top < base.height && top + height > 0);
  if (opacity === 0 || !visibleX || !visibleY) return;
  // The scaled overlay is held in memory whole: cap it like a decoded input.
  if (width * height > maxPixels) throw imageTooLarge(`Overlay ${index} scaled`, width, height, maxPixels);
  const decoded = await decode(layer.input, maxPixels, `Overlay ${index}`);
  drawOver(base, scale(decoded, width, height), left, top, opacity, layer.repeat);
}
