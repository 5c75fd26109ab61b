import type { DecodeLimits, ImageSample } from "@pixport/core";
import { sniffImageFormat } from "@pixport/core";
import { FORMAT_LIST, invalidImage } from "@pixport/core/adapter-kit";
import type { SharpOptions } from "sharp";
import sharp from "sharp";
import { asBuffer, translateSharpError } from "./errors.js";
import { limitFor } from "./header.js";
import type { ResolvedSharpImageCodecOptions } from "./options.js";

export async function sample(
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
