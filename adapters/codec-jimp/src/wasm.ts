import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

/**
 * Loading of the jsquash WASM codecs (WebP, AVIF): jsquash's Emscripten glue would fetch its
 * `.wasm` file by URL, which fails under Node; here the file is read from the installed package and
 * compiled, and the module is handed to the codec's `init`, once per thread, so nothing is ever
 * fetched at run time.
 */

/** A compiled WASM module (typed loosely: the DOM lib, which declares WebAssembly's values, is off). */
export type WasmModule = object;
/** A jsquash `init` taking the compiled module. */
export type InitWithModule = (module: WasmModule) => Promise<unknown>;

export const Wasm = (
  globalThis as unknown as {
    WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule>; validate(bytes: Uint8Array): boolean };
  }
).WebAssembly;

/** Reads an installed package file (`@jsquash/webp/codec/...wasm`). */
export function readPackageFile(specifier: string): Promise<Buffer> {
  return readFile(createRequire(import.meta.url).resolve(specifier));
}

/** Compiles an installed `.wasm` file. */
export async function compileWasm(specifier: string): Promise<WasmModule> {
  return Wasm.compile(await readPackageFile(specifier));
}

/**
 * Runs `load` once, sharing its promise; a failure is forgotten so the next call tries again.
 * Returns the function that awaits readiness.
 */
export function once(load: () => Promise<void>): () => Promise<void> {
  let ready: Promise<void> | undefined;
  return () => {
    ready ??= load();
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  };
}
