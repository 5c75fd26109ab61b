import decodeAvifWasm, { init as initDecoder } from "@jsquash/avif/decode.js";
import encodeAvifWasm, { init as initEncoder } from "@jsquash/avif/encode.js";
import type { Bitmap } from "../bitmap.js";
import { compileWasm, type InitWithModule, once } from "../wasm.js";

/**
 * AVIF through `@jsquash/avif` (libavif with libaom and dav1d compiled to WASM), loaded as
 * `wasm.ts` describes, once per thread (the codec's workers). The single-threaded encoder is used
 * (the multi-threaded one needs browser workers).
 */
const ensureReady = once(async () => {
  const [decoder, encoder] = await Promise.all([
    compileWasm("@jsquash/avif/codec/dec/avif_dec.wasm"),
    compileWasm("@jsquash/avif/codec/enc/avif_enc.wasm"),
  ]);
  await (initDecoder as unknown as InitWithModule)(decoder);
  await (initEncoder as unknown as InitWithModule)(encoder);
});

/** Decodes AVIF bytes (the primary image) to RGBA. Throws on corrupt or truncated data. */
export async function decodeAvif(bytes: Uint8Array): Promise<Bitmap> {
  await ensureReady();
  const image = await decodeAvifWasm(bytes.slice().buffer);
  if (image === null) throw new Error("The AVIF data could not be decoded.");
  const data = Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  return { data, width: image.width, height: image.height };
}

/**
 * libaom speed for the WASM encoder (0 slowest .. 10 fastest). 8 keeps a 1920x1280 encode within
 * a few seconds in WASM; quality maps 1..100 like sharp's, chroma 4:2:0 like the sharp codec.
 */
const AVIF_SPEED = 8;

/** Encodes RGBA to AVIF at `quality` (1..100), keeping the alpha channel. */
export async function encodeAvif(bitmap: Bitmap, quality: number): Promise<Buffer> {
  await ensureReady();
  // A copy that owns its whole buffer: the WASM glue reads `data.buffer` from offset 0, and small
  // Buffers are views into Node's shared pool.
  const data = new Uint8ClampedArray(bitmap.data);
  const encoded = await encodeAvifWasm(
    { data, width: bitmap.width, height: bitmap.height, colorSpace: "srgb" } as never,
    { quality, speed: AVIF_SPEED, subsample: 1 },
  );
  return Buffer.from(encoded);
}
