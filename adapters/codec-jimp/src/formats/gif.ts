import { BitmapImage, GifCodec, GifFrame, GifUtil } from "gifwrap";
import { GifReader } from "omggif";
import type { Bitmap } from "../bitmap.js";

/** An animation (or a still image: one frame) as full-canvas RGBA frames. */
export interface Frames {
  frames: Bitmap[];
  /** Delay of each frame, ms. */
  delays: number[];
  /** The NETSCAPE loop count as read (0: forever), or `null` when absent (played once). */
  loop: number | null;
}

/**
 * Decodes every GIF frame to a full-canvas RGBA bitmap with `omggif`, composing each frame over
 * the previous ones as its disposal method says (1 keep, 2 clear to transparent, 3 restore).
 */
export function decodeGif(bytes: Uint8Array): Frames {
  const reader = new GifReader(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const { width, height } = reader;
  const canvas = Buffer.alloc(width * height * 4);
  const frames: Bitmap[] = [];
  const delays: number[] = [];
  for (let index = 0; index < reader.numFrames(); index += 1) {
    const info = reader.frameInfo(index);
    const saved = info.disposal === 3 ? Buffer.from(canvas) : undefined;
    reader.decodeAndBlitFrameRGBA(index, canvas);
    frames.push({ data: Buffer.from(canvas), width, height });
    // GIF delays are in centiseconds; browsers show 0 or 1 as 100 ms, libvips keeps them as read.
    delays.push(info.delay * 10);
    if (info.disposal === 2) {
      for (let y = info.y; y < Math.min(height, info.y + info.height); y += 1) {
        canvas.fill(0, (y * width + info.x) * 4, (y * width + Math.min(width, info.x + info.width)) * 4);
      }
    } else if (saved !== undefined) {
      saved.copy(canvas);
    }
  }
  const loopCount = reader.loopCount();
  return { frames, delays, loop: loopCount ?? null };
}

/**
 * Encodes frames (all one size) as a GIF with `gifwrap`: alpha is cut at 50 % (GIF has one
 * transparent index), colours are reduced to one 256-colour palette per frame with Dekker's
 * neural-net quantiser (no dithering: dither noise flickers between frames).
 */
export async function encodeGif(animation: Frames): Promise<Buffer> {
  const frames = animation.frames.map((bitmap, index) => {
    const data = Buffer.from(bitmap.data);
    for (let offset = 3; offset < data.length; offset += 4) {
      if (data[offset]! < 128) {
        data[offset - 3] = 0;
        data[offset - 2] = 0;
        data[offset - 1] = 0;
        data[offset] = 0;
      } else {
        data[offset] = 255;
      }
    }
    return new GifFrame(new BitmapImage({ width: bitmap.width, height: bitmap.height, data }), {
      delayCentisecs: Math.max(0, Math.round((animation.delays[index] ?? 100) / 10)),
      disposalMethod: GifFrame.DisposeToBackgroundColor,
    });
  });
  for (const frame of frames) {
    if ((GifUtil.getColorInfo([frame]).indexCount ?? Number.POSITIVE_INFINITY) > 256)
      GifUtil.quantizeDekker(frame, 256);
  }
  const gif = await new GifCodec().encodeGif(frames, { loops: animation.loop as number });
  return gif.buffer;
}
