import type { EncodedImage, ImageFormat, TransformRequest } from "@pixport/core";
import { ErrorCodes, ImagePipelineError, sniffImageFormat } from "@pixport/core";
import type { Size, SourceCache } from "@pixport/core/adapter-kit";
import { ANIMATED_FORMATS, invalidImage, NOT_KEPT } from "@pixport/core/adapter-kit";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { AUTO_QUALITY_FORMATS, encodeAutoQuality } from "./auto-quality.js";
import { encode } from "./encode.js";
import { asBuffer, translateSharpError } from "./errors.js";
import { frameCount, limitFor, orientedSize, ourFormat } from "./header.js";
import { type DecodedSource, decodeSource, keptShrink } from "./kept-source.js";
import type { ResolvedSharpImageCodecOptions } from "./options.js";
import { compilePasses } from "./passes.js";
import { render, transformAnimation } from "./render.js";

/** One transform request, checked and with its decode settings and deadline. */
interface Job {
  request: TransformRequest;
  input: Buffer;
  format: ImageFormat;
  limitInputPixels: number;
  decodeOptions: SharpOptions;
  /** Gives a sharp pipeline the time left before the job's deadline (throws when none is left). */
  bounded: (image: Sharp) => Sharp;
}

export async function transform(
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

  try {
    return await run({ request, input, format, limitInputPixels, decodeOptions, bounded }, sources);
  } catch (error) {
    if (deadline !== undefined && /timeout/i.test(error instanceof Error ? error.message : "")) {
      throw processingTimeout(timeoutMs as number, error);
    }
    throw translateSharpError(error);
  }
}

async function run(job: Job, sources: SourceCache<DecodedSource> | undefined): Promise<EncodedImage> {
  const { request, input, format, limitInputPixels } = job;
  const key = request.sourceKey;
  if (sources !== undefined && key !== undefined) {
    const hit = await fromKeptHit(job, sources, key);
    if (hit !== null) return hit;
  }
  // Header first: the pixel cap and the real format are checked before any pixel is decoded.
  const metadata = await sharp(input, { limitInputPixels, failOn: "warning" }).metadata();
  if (ourFormat(metadata) !== format) {
    throw invalidImage(`The input's header does not match its ${format} signature.`);
  }
  if (sources !== undefined && key !== undefined) {
    const kept = await fromKeptDecode(job, sources, key, metadata);
    if (kept !== null) return kept;
  }
  return await fromInput(job, metadata);
}

/** A kept source serves a request that needs no more pixels than it holds. */
function servesFor(request: TransformRequest): (kept: DecodedSource) => boolean {
  return (kept) => kept.shrink <= keptShrink(request.steps, kept.full);
}

/** A kept source may be used within the request's pixel cap. */
function allowed(job: Job, kept: DecodedSource | null): kept is DecodedSource {
  return kept !== null && kept.full.width * kept.full.height <= job.limitInputPixels;
}

/** The request, from a source kept in the cache already (null: none that serves it). */
async function fromKeptHit(
  job: Job,
  sources: SourceCache<DecodedSource>,
  key: string,
): Promise<EncodedImage | null> {
  const serves = servesFor(job.request);
  const hit = sources.peek(key);
  if (hit === null || !serves(hit)) return null;
  const kept = await sources.get(key, async () => NOT_KEPT, { serves });
  return allowed(job, kept) ? await fromKept(job, kept) : null;
}

/** The request, from its source decoded into the cache (null: not kept, take the usual path). */
async function fromKeptDecode(
  job: Job,
  sources: SourceCache<DecodedSource>,
  key: string,
  metadata: Metadata,
): Promise<EncodedImage | null> {
  const { request, input, format, limitInputPixels, decodeOptions, bounded } = job;
  const serves = servesFor(request);
  // The source's bytes at the size this request would keep it, for the cache's admission rule.
  // A failed decode for the cache (corrupt bytes, or the deadline of whichever request started
  // it) falls back to the usual path, which answers for this request with its own deadline.
  const full = orientedSize(metadata);
  const shrink = keptShrink(request.steps, full);
  const bytes = Math.ceil(full.width / shrink) * Math.ceil(full.height / shrink) * metadata.channels;
  const kept = await sources
    .get(
      key,
      () => decodeSource(input, metadata, format, shrink, limitInputPixels, decodeOptions, bounded, sources),
      { bytes, serves },
    )
    .catch(() => null);
  return allowed(job, kept) ? await fromKept(job, kept) : null;
}

async function fromKept(job: Job, kept: DecodedSource): Promise<EncodedImage> {
  const size = { width: kept.raw.width, height: kept.raw.height };
  return await renderEncoded(
    job,
    () => sharp(kept.data, { raw: kept.raw, limitInputPixels: false }),
    size,
    !kept.hasAlpha,
  );
}

/** The usual path: the request decoded from its input bytes (every frame of an animation). */
async function fromInput(job: Job, metadata: Metadata): Promise<EncodedImage> {
  const { request, input, format, limitInputPixels, decodeOptions, bounded } = job;
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
  return await renderEncoded(
    job,
    () => sharp(input, decodeOptions),
    orientedSize(metadata),
    !metadata.hasAlpha,
  );
}

/** Runs the request's passes from `first` (of size `start`) and encodes what they leave. */
async function renderEncoded(
  job: Job,
  first: () => Sharp,
  start: Size,
  startOpaque: boolean,
): Promise<EncodedImage> {
  const { request, decodeOptions, bounded } = job;
  const passes = compilePasses(request.steps, start, decodeOptions);
  const { output } = request;
  const autoQuality =
    output.autoQuality !== undefined && (AUTO_QUALITY_FORMATS as readonly string[]).includes(output.format)
      ? output.autoQuality
      : undefined;
  // An automatic quality encodes the rendered pixels several times: no pass is fused with the encoder.
  const rendered = await render(first, start, startOpaque, passes, bounded, autoQuality ? undefined : output);
  if ("data" in rendered && "format" in rendered) return rendered;
  if (autoQuality !== undefined)
    return await encodeAutoQuality(rendered.source(), { ...output, autoQuality }, bounded);
  return await encode(bounded(rendered.source()), output);
}

function processingTimeout(timeoutMs: number, cause?: unknown): ImagePipelineError {
  return new ImagePipelineError(
    ErrorCodes.PROCESSING_TIMEOUT,
    `the work took longer than ${Math.round(timeoutMs / 100) / 10} s and was stopped`,
    cause === undefined ? {} : { cause },
  );
}
