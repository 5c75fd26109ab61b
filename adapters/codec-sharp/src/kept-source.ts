import type { ImageFormat, TransformRequest } from "@pixport/core";
import type { Size, SourceCache } from "@pixport/core/adapter-kit";
import { NOT_KEPT } from "@pixport/core/adapter-kit";
import type { Metadata, Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { frameCount, orientedSize } from "./header.js";

/** Decoded pixels of one source image, as libvips left them (EXIF orientation applied). */
export interface DecodedSource {
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
export function keptShrink(steps: TransformRequest["steps"], full: Size): number {
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

/**
 * Decodes a stored source for the source cache, reduced `shrink` times (1: whole): one frame, 8
 * bits per channel, sRGB or grey (with or without alpha), small enough to keep; anything else is
 * {@link NOT_KEPT} and takes the usual path. `metadata` is the header the caller checked.
 */
export async function decodeSource(
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
