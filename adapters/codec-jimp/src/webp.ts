import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import decodeWebpWasm, { init as initDecoder } from "@jsquash/webp/decode.js";
import encodeWebpWasm, { init as initEncoder } from "@jsquash/webp/encode.js";
import type { Bitmap } from "./bitmap.js";

/**
 * WebP through `@jsquash/webp` (libwebp compiled to WASM). jimp's own `@jimp/wasm-webp` fails under
 * Node 20 because its Emscripten glue fetches the `.wasm` file by URL; here the file is read from
 * the installed package with `fs` and instantiated once, so nothing is ever fetched at run time.
 */
let ready: Promise<void> | undefined;

/** A compiled WASM module (typed loosely: the DOM lib, which declares WebAssembly's values, is off). */
type WasmModule = object;
type InitWithModule = (module: WasmModule) => Promise<unknown>;
const Wasm = (
  globalThis as unknown as {
    WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule>; validate(bytes: Uint8Array): boolean };
  }
).WebAssembly;

async function compile(specifier: string): Promise<WasmModule> {
  const path = createRequire(import.meta.url).resolve(specifier);
  return Wasm.compile(await readFile(path));
}

function ensureReady(): Promise<void> {
  ready ??= (async () => {
    const simd = await readFile(
      createRequire(import.meta.url).resolve("@jsquash/webp/codec/enc/webp_enc_simd.wasm"),
    );
    // jsquash picks its SIMD glue when the runtime validates SIMD; pass the matching module.
    const encoder = Wasm.validate(simd)
      ? await Wasm.compile(simd)
      : await compile("@jsquash/webp/codec/enc/webp_enc.wasm");
    const decoder = await compile("@jsquash/webp/codec/dec/webp_dec.wasm");
    await (initDecoder as unknown as InitWithModule)(decoder);
    await (initEncoder as unknown as InitWithModule)(encoder);
  })();
  ready.catch(() => {
    ready = undefined;
  });
  return ready;
}

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
