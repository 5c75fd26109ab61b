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
import type { OutputOptions, Size } from "@pixport/core/adapter-kit";
import {
  ANIMATED_FORMATS,
  defineImageCodec,
  FORMAT_LIST,
  invalidImage,
  NOT_KEPT,
  SourceCache,
  TRANSFORM_STEP_TYPES,
} from "@pixport/core/adapter-kit";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { asBuffer, translateSharpError } from "./errors.js";
import {
  parseSharpImageCodecOptions,
  type ResolvedSharpImageCodecOptions,
  type SharpImageCodecOptions,
} from "./options.js";
import { compilePasses, type Pass, sharpColor } from "./passes.js";

/** Decoded pixels of one source image, as libvips left them (EXIF orientation applied). */
interface DecodedSource {
  data: Buffer;
  raw: { width: number; height: number; channels: 1 | 2 | 3 | 4 };
  /** The source has an alpha channel (not: some pixel is transparent). */
  hasAlpha: boolean;
  /** The source's own (oriented) size; `raw` is it divided by `shrink`, rounded up. */
  full: Size;
  /** 1, 2, 4 or 8: how much the kept pixels were reduced from the source. */
  shrink: number;
}

/** The most a kept source is reduced (as JPEG's shrink-on-load goes). */
const MAX_KEPT_SHRINK = 8;

/**
 * How far (1, 2, 4 or 8) a source of size `full` can be reduced before `steps` and still give the
 * same picture: when the first step is a resize to at most 1/k of the source on both axes, a copy
 * reduced k times has every pixel the resize samples (the decode path reduces on load too, JPEG by
 * 2, 4 or 8). Anything else needs the source's own pixels (1).
 */
function keptShrink(steps: TransformRequest["steps"], full: Size): number {
  const first = steps[0];
  if (first === undefined || first.type !== "resize") return 1;
  const scaleX = first.width / full.width;
  const scaleY = first.height / full.height;
  // contain scales the whole source into the box; fill and cover sample it at the larger scale.
  const scale = first.fit === "contain" ? Math.min(scaleX, scaleY) : Math.max(scaleX, scaleY);
  let shrink = 1;
  while (shrink < MAX_KEPT_SHRINK && scale * shrink * 2 <= 1) shrink *= 2;
  return shrink;
}

const FORMATS: readonly ImageFormat[] = IMAGE_FORMATS;

const CAPABILITIES: CodecCapabilities = Object.freeze({
  inputFormats: FORMATS,
  outputFormats: FORMATS,
  steps: TRANSFORM_STEP_TYPES,
  animation: ANIMATED_FORMATS,
  smartCrop: ["attention", "entropy"] as const,
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

/** PNG zlib level: 6 is zlib's own balance of size and speed. */
const PNG_COMPRESSION_LEVEL = 6;

/**
 * AVIF encoder effort (libaom speed, 0..9 in sharp's scale): 1 keeps a 1920x1280 encode at about
 * 2-3x WebP's time on this project's benchmark (`bench/formats.mjs`); effort 2 was 4-5x, and 4
 * (sharp's default) 20x+. Chroma is subsampled 4:2:0 (what cameras and browsers expect; half the
 * bytes of 4:4:4 for photos).
 */
const AVIF_EFFORT = 1;
/** GIF: palette effort 3 of 1..10 (effort 7, sharp's default, was 7x slower for the same look); full dither. */
const GIF_EFFORT = 3;
const GIF_DITHER = 1;

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

async function probe(input: Uint8Array): Promise<ImageHeader | null> {
  const bytes = asBuffer(input, "input");
  const format = sniffImageFormat(bytes);
  if (format === null) return null;
  try {
    // Header only: metadata() never decodes pixels, so the pixel cap is off here on purpose; a
    // decompression bomb reports its real size and the caller refuses it.
    const metadata = await sharp(bytes, { limitInputPixels: false, failOn: "warning" }).metadata();
    if (ourFormat(metadata) !== format || !(metadata.width > 0) || !(metadata.height > 0)) return null;
    const frames = frameCount(metadata, format);
    return frames > 1 ? { format, ...orientedSize(metadata), frames } : { format, ...orientedSize(metadata) };
  } catch {
    return null;
  }
}

/** pixport's name of what libvips read: HEIF coded with AV1 is `avif`; HEVC is not readable here. */
function ourFormat(metadata: Metadata): ImageFormat | null {
  if (metadata.format === "heif") return metadata.compression === "av1" ? "avif" : null;
  return (IMAGE_FORMATS as readonly string[]).includes(metadata.format)
    ? (metadata.format as ImageFormat)
    : null;
}

/** Frames of an animation or pages of a TIFF (AVIF image sequences are read as their primary image). */
function frameCount(metadata: Metadata, format: ImageFormat): number {
  if (format !== "gif" && format !== "webp" && format !== "tiff") return 1;
  return Math.max(1, metadata.pages ?? 1);
}

function limitFor(limits: DecodeLimits | undefined, settings: ResolvedSharpImageCodecOptions): number {
  const requested = limits?.maxInputPixels;
  return typeof requested === "number" && Number.isFinite(requested) && requested > 0
    ? Math.floor(requested)
    : settings.maxInputPixels;
}

async function sample(
  input: Uint8Array,
  maxSide: number,
  limits: DecodeLimits,
  settings: ResolvedSharpImageCodecOptions,
): Promise<ImageSample> {
  const bytes = asBuffer(input, "input");
  const format = sniffImageFormat(bytes);
  if (format === null) throw invalidImage(`The input is not a ${FORMAT_LIST} image.`);
  const options: SharpOptions = {
    limitInputPixels: limitFor(limits, settings),
    failOn: "warning",
    autoOrient: true,
  };
  try {
    const metadata = await sharp(bytes, options).metadata();
    const side = Math.max(1, Math.floor(maxSide));
    const { data, info } = await sharp(bytes, options)
      .resize(side, side, { fit: "inside", withoutEnlargement: true })
      .ensureAlpha()
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
    // The alpha channel's presence is not enough: "has_alpha" means some pixel is not opaque.
    const hasAlpha = metadata.hasAlpha ? !(await isOpaque(bytes, options, data, metadata.depth)) : false;
    const frames = format === "gif" || format === "webp" ? Math.max(1, metadata.pages ?? 1) : 1;
    return { width: info.width, height: info.height, data, hasAlpha, frames };
  } catch (error) {
    throw translateSharpError(error);
  }
}

/**
 * Whether every pixel of an image with an alpha channel is fully opaque. The sample (RGBA, reduced
 * from the whole image) answers "no" whenever one of its pixels is not opaque: a reduction of an
 * opaque alpha channel is opaque to the last bit. Otherwise the alpha channel alone is decoded and
 * compared with its maximum, a quarter of what sharp's `stats()` held (the whole image, every
 * band, in memory: 57 MB for a 13-megapixel RGBA PNG against 19 MB).
 */
async function isOpaque(
  bytes: Buffer,
  options: SharpOptions,
  sample: Buffer,
  depth: string | undefined,
): Promise<boolean> {
  for (let offset = 3; offset < sample.length; offset += 4) if (sample[offset] !== 255) return false;
  const wide = depth === "ushort";
  if (depth !== undefined && depth !== "uchar" && !wide)
    return (await sharp(bytes, options).stats()).isOpaque;
  // A 16-bit alpha channel is kept 16-bit (grey16); sharp would otherwise bring it to 8 bits first.
  const channel = sharp(bytes, options).extractChannel("alpha");
  const alpha = await (wide ? channel.toColourspace("grey16") : channel)
    .raw({ depth: wide ? "ushort" : "uchar" })
    .toBuffer();
  // The largest value of either depth is all bits set: every byte 0xff. Compared a block at a time
  // by memcmp (Buffer.equals), not a JavaScript loop over the pixels.
  const block = Math.min(alpha.length, 1 << 16);
  const full = Buffer.alloc(block, 0xff);
  for (let offset = 0; offset < alpha.length; offset += block) {
    const part = alpha.subarray(offset, Math.min(alpha.length, offset + block));
    if (!part.equals(full.subarray(0, part.length))) return false;
  }
  return true;
}

async function transform(
  request: TransformRequest,
  settings: ResolvedSharpImageCodecOptions,
  sources: SourceCache<DecodedSource> | undefined,
): Promise<EncodedImage> {
  // A checked request (defineImageCodec, or the core's runCodec): bytes of a known format.
  const input = asBuffer(request.input, "input");
  const format = sniffImageFormat(input) as ImageFormat;

  const limitInputPixels = limitFor(request.limits, settings);
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

  // A kept source serves a request that needs no more pixels than it holds, within its pixel cap.
  const serves = (kept: DecodedSource) => kept.shrink <= keptShrink(request.steps, kept.full);
  const allowed = (kept: DecodedSource | null): kept is DecodedSource =>
    kept !== null && kept.full.width * kept.full.height <= limitInputPixels;
  const fromKept = async (kept: DecodedSource) => {
    const size = { width: kept.raw.width, height: kept.raw.height };
    const rendered = await render(
      () => sharp(kept.data, { raw: kept.raw, limitInputPixels: false }),
      size,
      !kept.hasAlpha,
      compilePasses(request.steps, size, decodeOptions),
      bounded,
      request.output,
    );
    if ("data" in rendered && "format" in rendered) return rendered;
    return await encode(bounded(rendered.source()), request.output);
  };

  try {
    const key = request.sourceKey;
    const hit = sources === undefined || key === undefined ? null : sources.peek(key);
    if (sources !== undefined && key !== undefined && hit !== null && serves(hit)) {
      const kept = await sources.get(key, async () => NOT_KEPT, { serves });
      if (allowed(kept)) return await fromKept(kept);
    }
    // Header first: the pixel cap and the real format are checked before any pixel is decoded.
    const metadata = await sharp(input, { limitInputPixels, failOn: "warning" }).metadata();
    if (ourFormat(metadata) !== format) {
      throw invalidImage(`The input's header does not match its ${format} signature.`);
    }
    if (sources !== undefined && key !== undefined) {
      // The source's bytes at the size this request would keep it, for the cache's admission rule.
      // A failed decode for the cache (corrupt bytes, or the deadline of whichever request started
      // it) falls back to the usual path, which answers for this request with its own deadline.
      const full = orientedSize(metadata);
      const shrink = keptShrink(request.steps, full);
      const bytes = Math.ceil(full.width / shrink) * Math.ceil(full.height / shrink) * metadata.channels;
      const kept = await sources
        .get(
          key,
          () =>
            decodeSource(input, metadata, format, shrink, limitInputPixels, decodeOptions, bounded, sources),
          { bytes, serves },
        )
        .catch(() => null);
      if (allowed(kept)) return await fromKept(kept);
    }
    const frames = frameCount(metadata, format);
    const animated =
      frames > 1 && ANIMATED_FORMATS.includes(format) && ANIMATED_FORMATS.includes(request.output.format);
    if (frames * metadata.width * metadata.height > limitInputPixels) {
      throw new ImagePipelineError(
        ErrorCodes.IMAGE_TOO_LARGE,
        "The animation exceeds the decoder's pixel limit (limits.maxInputPixels) in all its frames.",
      );
    }
    if (animated) return await transformAnimation(input, metadata, frames, request, decodeOptions, bounded);

    const passes = compilePasses(request.steps, orientedSize(metadata), decodeOptions);
    const rendered = await render(
      () => sharp(input, decodeOptions),
      orientedSize(metadata),
      !metadata.hasAlpha,
      passes,
      bounded,
      request.output,
    );
    if ("data" in rendered && "format" in rendered) return rendered;
    return await encode(bounded(rendered.source()), request.output);
  } catch (error) {
    if (deadline !== undefined && /timeout/i.test(error instanceof Error ? error.message : "")) {
      throw processingTimeout(timeoutMs as number, error);
    }
    throw translateSharpError(error);
  }
}

/**
 * Decodes a stored source for the source cache, reduced `shrink` times (1: whole): one frame, 8
 * bits per channel, sRGB or grey (with or without alpha), small enough to keep; anything else is
 * {@link NOT_KEPT} and takes the usual path. `metadata` is the header the caller checked.
 */
async function decodeSource(
  input: Buffer,
  metadata: Metadata,
  format: ImageFormat,
  shrink: number,
  limitInputPixels: number,
  decodeOptions: SharpOptions,
  bounded: (image: Sharp) => Sharp,
  sources: SourceCache<DecodedSource>,
): Promise<DecodedSource | typeof NOT_KEPT> {
  const full = orientedSize(metadata);
  const width = Math.ceil(full.width / shrink);
  const height = Math.ceil(full.height / shrink);
  if (
    frameCount(metadata, format) > 1 ||
    metadata.depth !== "uchar" ||
    (metadata.space !== "srgb" && metadata.space !== "b-w") ||
    metadata.width * metadata.height > limitInputPixels ||
    !sources.fits(width, height, metadata.channels)
  ) {
    return NOT_KEPT;
  }
  // A reduced copy is made as a decode for that size makes it (JPEG shrinks on load), then resampled.
  const image = sharp(input, decodeOptions);
  const { data, info } = await bounded(
    (shrink === 1 ? image : image.resize(width, height, { fit: "fill" })).raw({ depth: "uchar" }),
  ).toBuffer({ resolveWithObject: true });
  return {
    data,
    raw: { width: info.width, height: info.height, channels: info.channels },
    hasAlpha: metadata.hasAlpha,
    full,
    shrink,
  };
}

/** What {@link render} leaves: the encoded image (last pass fused with the encoder), or a raw source. */
type Rendered = EncodedImage | { source: () => Sharp; size: Size };

/**
 * Runs the passes over `source`. Passes are chained through raw pixels; when `output` is given and
 * it is safe, the last pass is fused with the encoder and the encoded image is returned.
 */
async function render(
  first: () => Sharp,
  start: Size,
  startOpaque: boolean,
  passes: readonly Pass[],
  bounded: (image: Sharp) => Sharp,
  output: OutputOptions | undefined,
): Promise<Rendered> {
  let source = first;
  let size = start;
  let opaque = startOpaque;
  for (const [index, pass] of passes.entries()) {
    const operations = await pass.plan(size);
    if (operations === null) continue;
    const image = operations(source());
    const last = index === passes.length - 1;
    // Fusing the last pass with the encoder saves a raw round trip. For jpeg that is only right
    // when nothing can turn transparent after sharp's (early) flatten.
    if (
      output !== undefined &&
      last &&
      !pass.materialise &&
      (output.format !== "jpeg" || (opaque && pass.keepsOpaque))
    ) {
      return await encode(bounded(image), output);
    }
    const { data, info } = await bounded(image.raw({ depth: "uchar" })).toBuffer({ resolveWithObject: true });
    const raw = { width: info.width, height: info.height, channels: info.channels };
    source = () => sharp(data, { raw, limitInputPixels: false });
    size = { width: info.width, height: info.height };
    opaque = info.channels === 1 || info.channels === 3;
  }
  return { source, size };
}

/**
 * An animation kept as one: every frame is decoded once (one strip), runs the same passes on its
 * own (so rotations, crops and overlays land the same on every frame), and the frames are joined
 * again with their delays and loop count.
 */
async function transformAnimation(
  input: Buffer,
  metadata: Metadata,
  frames: number,
  request: TransformRequest,
  decodeOptions: SharpOptions,
  bounded: (image: Sharp) => Sharp,
): Promise<EncodedImage> {
  const strip = await bounded(
    sharp(input, { ...decodeOptions, pages: -1 })
      .ensureAlpha()
      .raw({ depth: "uchar" }),
  ).toBuffer({
    resolveWithObject: true,
  });
  const width = strip.info.width;
  const frameHeight = metadata.pageHeight ?? Math.floor(strip.info.height / frames);
  const count = Math.floor(strip.info.height / frameHeight);
  const frameBytes = width * frameHeight * 4;
  const start = { width, height: frameHeight };
  const passes = compilePasses(request.steps, start, decodeOptions);
  const outputs: Buffer[] = [];
  let size: Size = start;
  for (let index = 0; index < count; index += 1) {
    const pixels = strip.data.subarray(index * frameBytes, (index + 1) * frameBytes);
    const raw = { width, height: frameHeight, channels: 4 as const };
    const rendered = await render(
      () => sharp(pixels, { raw, limitInputPixels: false }),
      start,
      false,
      passes,
      bounded,
      undefined,
    );
    if ("format" in rendered) throw new Error("unreachable: frames are never encoded one by one");
    const frame = await bounded(rendered.source().ensureAlpha().raw({ depth: "uchar" })).toBuffer({
      resolveWithObject: true,
    });
    if (index > 0 && (frame.info.width !== size.width || frame.info.height !== size.height)) {
      throw new Error("Frames of one animation came out in different sizes.");
    }
    size = { width: frame.info.width, height: frame.info.height };
    outputs.push(frame.data);
  }
  const joined = sharp(Buffer.concat(outputs), {
    raw: { width: size.width, height: size.height * count, channels: 4, pageHeight: size.height },
    limitInputPixels: false,
  });
  const delay = metadata.delay?.slice(0, count);
  const animation = {
    loop: metadata.loop ?? 0,
    ...(delay === undefined || delay.length === 0 ? {} : { delay }),
  };
  const encoded = await encode(bounded(joined), request.output, animation);
  return { ...encoded, height: size.height, frames: count };
}

async function encode(
  image: Sharp,
  output: OutputOptions,
  animation: { loop: number; delay?: number[] } = { loop: 0 },
): Promise<EncodedImage> {
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
      encoder = image.webp({ quality, ...animation });
      break;
    case "avif":
      encoder = image.avif({ quality, effort: AVIF_EFFORT, chromaSubsampling: "4:2:0" });
      break;
    case "gif":
      encoder = image.gif({ effort: GIF_EFFORT, dither: GIF_DITHER, ...animation });
      break;
    case "tiff":
      // Lossless (LZW with the horizontal predictor); alpha kept; one page.
      encoder = image.tiff({ compression: "lzw", predictor: "horizontal" });
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
