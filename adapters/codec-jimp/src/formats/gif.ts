import * as gifencModule from "gifenc";
import { GifReader } from "omggif";
import type { Bitmap } from "../bitmap.js";

type GifencApi = Pick<typeof gifencModule, "applyPalette" | "GIFEncoder" | "quantize">;

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
 * Encodes frames (all one size) as a GIF with `gifenc`: one palette of up to 256 colours per frame
 * from its pairwise-nearest-neighbour quantiser (gifwrap's image-q quantisers took 12 s for one
 * 1920x1280 photo in bench/formats.mjs; gifenc's, well under one), alpha cut at 50 % (GIF has one
 * transparent index), no dithering (dither noise flickers between frames). Every frame covers the
 * canvas and is disposed to the background, so transparency stays transparent.
 */
export function encodeGif(animation: Frames): Buffer {
  // Node's ESM loader sees gifenc's CommonJS build (named exports only under `default`); resolvers
  // that prefer its `module` field see real named exports.
  const loaded = gifencModule as unknown as Partial<GifencApi> & { default: GifencApi };
  const { applyPalette, GIFEncoder, quantize } =
    typeof loaded.GIFEncoder === "function" ? (loaded as GifencApi) : loaded.default;
  const gif = GIFEncoder();
  for (const [index, bitmap] of animation.frames.entries()) {
    // A copy that owns its buffer: gifenc reads `rgba.buffer` from offset 0.
    const rgba = new Uint8Array(bitmap.data);
    const palette = quantize(rgba, 256, { format: "rgba4444", oneBitAlpha: true });
    const indexed = applyPalette(rgba, palette, "rgba4444");
    const transparentIndex = palette.findIndex((color) => color.length > 3 && color[3] === 0);
    gif.writeFrame(indexed, bitmap.width, bitmap.height, {
      palette,
      delay: Math.max(0, animation.delays[index] ?? 100),
      repeat: animation.loop === null ? -1 : animation.loop,
      transparent: transparentIndex >= 0,
      transparentIndex: Math.max(0, transparentIndex),
      dispose: 2,
    });
  }
  gif.finish();
  return Buffer.from(gif.bytes());
}
