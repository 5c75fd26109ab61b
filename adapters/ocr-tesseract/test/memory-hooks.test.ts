import { ErrorCodes, isImagePipelineError, type MemoryReleaser } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { createTesseractTextExtractor, type TesseractEngine } from "../src/index.js";

/**
 * The memory hooks a host injects (the adapter imports no allocator): `limitMallocArenas` is
 * called once, at creation, with `mallocArenas`; `memoryReleaser` is a `MemoryReleaser` or a
 * function of the engine chosen, released after each page. The real allocator behind them is
 * tested in tesseract-text-extractor.test.ts (arenas, V8's collections).
 */
describe("the injected memory hooks", () => {
  it("calls limitMallocArenas once with mallocArenas (2 by default), and not at all with 0", async () => {
    const calls: number[] = [];
    const limitMallocArenas = (max: number) => calls.push(max);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas }).close();
    expect(calls).toEqual([2]);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas, mallocArenas: 3 }).close();
    expect(calls).toEqual([2, 3]);
    await createTesseractTextExtractor({ engine: "wasm", limitMallocArenas, mallocArenas: 0 }).close();
    expect(calls).toEqual([2, 3]);
  });

  it("refuses hooks of the wrong shape with INVALID_CONFIGURATION naming them", () => {
    const refusal = (options: object) => {
      try {
        createTesseractTextExtractor({ engine: "wasm", ...options } as never);
      } catch (error) {
        expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
        return (error as Error).message;
      }
      throw new Error("not refused");
    };
    expect(refusal({ limitMallocArenas: 2 })).toMatch(/limitMallocArenas/);
    expect(refusal({ memoryReleaser: { allocator: "glibc" } })).toMatch(/memoryReleaser/);
    expect(refusal({ memoryReleaser: true })).toMatch(/memoryReleaser/);
  });

  it("makes the releaser for the engine chosen and releases after each page, a turn after the answer", async () => {
    const engines: TesseractEngine[] = [];
    let releases = 0;
    const releaser: MemoryReleaser = {
      allocator: "test",
      release: async () => {
        releases += 1;
      },
    };
    const extractor = createTesseractTextExtractor({
      engine: "wasm",
      workers: 1,
      memoryReleaser: (engine) => {
        engines.push(engine);
        return releaser;
      },
    });
    try {
      expect(engines).toEqual(["wasm"]);
      const page = await sharp({ create: { width: 320, height: 200, channels: 3, background: "#fff" } })
        .png()
        .toBuffer();
      const image = { data: new Uint8Array(page), mimeType: "image/png" as const, width: 320, height: 200 };
      for (let round = 1; round <= 2; round += 1) {
        await extractor.extract({ model: "tesseract", image, format: "plain" });
        expect(releases).toBe(round - 1);
        await new Promise((resolve) => setImmediate(resolve));
        expect(releases).toBe(round);
      }
    } finally {
      await extractor.close();
    }
    expect(engines).toEqual(["wasm"]);
  }, 60_000);
});
