import type { BackgroundRemover, ImageCodec, Logger, MemoryReleaser, ModelPorts } from "@pixport/core";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import type { ResolvedPixportContainerConfig } from "../config.js";
import type { OwnedResources } from "../lifecycle.js";
import { importOptional } from "./optional-import.js";

/**
 * The configured codec. Each codec package is imported only when chosen, so `codec: "jimp"` runs on
 * hosts where sharp's native binaries are missing or cannot load.
 */
export async function createCodec(settings: ResolvedPixportContainerConfig): Promise<ImageCodec> {
  const { maxInputPixels } = settings.limits;
  const { sourceCacheBytes } = settings;
  if (settings.codec === "jimp") {
    const { createJimpCodec } = await importOptional(
      () => import("@pixport/codec-jimp"),
      "@pixport/codec-jimp",
      'codec "jimp"',
    );
    return createJimpCodec({ maxInputPixels, sourceCacheBytes });
  }
  const { createSharpCodec } = await import("@pixport/codec-sharp");
  return createSharpCodec({ maxInputPixels, sourceCacheBytes, cache: settings.vipsCache });
}

/** The allocator's releaser (`releaseFreeMemory`), imported only when it is on. */
export async function createMemoryReleaser(): Promise<MemoryReleaser> {
  const { createAllocatorReleaser } = await import("@pixport/allocator");
  return createAllocatorReleaser();
}

/**
 * Model-backed operations: OpenAI-compatible providers from the `models` registry, and for
 * extract-formatted-text without a registry model the embedded offline tesseract extractor, whose
 * workers start on the first extraction only. The openai SDK (about 8 MB resident) is loaded only
 * with a model registry.
 */
export async function createModels(
  settings: ResolvedPixportContainerConfig,
  owned: OwnedResources,
  logger: Logger,
  memoryReleaser: MemoryReleaser | undefined,
): Promise<ModelPorts> {
  const registry = settings.models;
  const remote =
    registry === undefined
      ? undefined
      : (
          await importOptional(
            () => import("@pixport/vision-openai"),
            "@pixport/vision-openai and openai",
            "models",
          )
        ).createOpenAiModels({ registry, logger });
  if (registry?.defaults.extract !== undefined) return { ...remote };
  const extractor = createTesseractTextExtractor({
    ...settings.ocr,
    engine: settings.ocrEngine,
    // The launcher chooses the allocator and its settings (bin/with-allocator of the server):
    // tcmalloc on the default start, two glibc arenas on the lean one. A process on glibc
    // otherwise keeps glibc's arenas: two cost the resize load 4-10 % of its throughput.
    mallocArenas: 0,
    // With a memory budget the pipeline releases once the node is idle (the pages are jobs of the
    // budget); without one, the extractor releases after each page itself.
    memoryReleaser: settings.memoryBudget === false && memoryReleaser !== undefined ? memoryReleaser : false,
  });
  owned.engines.push(() => extractor.close());
  owned.ocrEngine = extractor.engine;
  return { ...remote, textExtractor: extractor };
}

/**
 * The remove-background engine. `onnx`: the configured model on `@pixport/background-onnx` (an
 * optional package, imported only when chosen; the model is loaded and checked now, so a bad path or
 * model fails the composition). `sharp` (default): the embedded classical remover
 * (`@pixport/background-sharp`); with `codec: "jimp"` on a host where sharp cannot load, there is
 * none and remove-background answers 501.
 */
export async function createBackgroundRemover(
  settings: ResolvedPixportContainerConfig,
  logger: Logger,
): Promise<(BackgroundRemover & { close?(): Promise<void> }) | undefined> {
  const { engine, model, ...onnxOptions } = settings.backgroundRemoval;
  const maxInputPixels = settings.limits.maxInputPixels;
  if (engine === "onnx" && model !== undefined) {
    const onnx = await importOptional(
      () => import("@pixport/background-onnx"),
      "@pixport/background-onnx",
      'backgroundRemoval.engine "onnx"',
    );
    return onnx.createOnnxBackgroundRemover({ ...onnxOptions, model, maxInputPixels });
  }
  try {
    const { createSharpBackgroundRemover } = await import("@pixport/background-sharp");
    return createSharpBackgroundRemover({ maxInputPixels });
  } catch (error) {
    if (settings.codec !== "jimp") throw error;
    logger.warn?.("sharp could not load: remove-background is not available", { error: String(error) });
    return undefined;
  }
}
