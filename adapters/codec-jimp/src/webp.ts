import decodeWebpWasm, { init as initDecoder } from "@jsquash/webp/decode.js";
import encodeWebpWasm, { init as initEncoder } from "@jsquash/webp/encode.js";
import type { Bitmap } from "./bitmap.js";
import { compileWasm, type InitWithModule, once, readPackageFile, Wasm } from "./wasm.js";

/** WebP through `@jsquash/webp` (libwebp compiled to WASM), loaded as `wasm.ts` describes. */
const ensureReady = once(async () => {
  const simd = await readPackageFile("@jsquash/webp/codec/enc/webp_enc_simd.wasm");
  // jsquash picks its SIMD glue when the runtime validates SIMD; pass the matching module.
  const encoder = Wasm.validate(simd)
    ? await Wasm.compile(simd)
    : await compileWasm("@jsquash/webp/codec/enc/webp_enc.wasm");
  const decoder = await compileWasm("@jsquash/webp/codec/dec/webp_dec.wasm");
  await (initDecoder as unknown as InitWithModule)(decoder);
  await (initEncoder as unknown as InitWithModule)(encoder);
});

/** Decodes WebP bytes to RGBA. Throws on corrupt or truncated data. */
export async function decodeWebp(bytes: Uint8Array): Promise<Bitmap> {
  await ensureReady();
  // The WASM glue copies the input into its own heap; hand it an exact ArrayBuffer.
  const copy = bytes.slice().buffer;
  const image = await decodeWebpWasm(copy);
  const data = Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  return { data, width: image.width, height: image.height };
}

/** Encodes RGBA to lossy WebP at `quality` (1..100), keeping the alpha channel. */
export async function encodeWebp(bitmap: Bitmap, quality: number): Promise<Buffer> {
  await ensureReady();
  const data = new Uint8ClampedArray(bitmap.data.buffer, bitmap.data.byteOffset, bitmap.data.byteLength);
  const encoded = await encodeWebpWasm(
    { data, width: bitmap.width, height: bitmap.height, colorSpace: "srgb" } as never,
    { quality },
  );
  return Buffer.from(encoded);
}
