import type { EncodedImage } from "@pixport/core";
import type { OutputOptions } from "@pixport/core/adapter-kit";
import type { Sharp } from "sharp";
import { sharpColor } from "./passes.js";

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

export async function encode(
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
