import type { ModelCallOptions, ModelProvider } from "./vision-model.js";

/** Input of {@link ImageGenerator.generate}. */
export interface ImageGenerationRequest {
  /** API model name (`sdxl`, `flux`, ...). */
  model: string;
  prompt: string;
  /** Things to avoid; adapters whose upstream has no such field fold it into the prompt. */
  negativePrompt?: string | undefined;
  /** Makes the output deterministic where the upstream supports seeds. */
  seed?: number | undefined;
  width: number;
  height: number;
}

/**
 * Text-to-image (`POST /v1/images/imagine`). Resolves the provider's encoded image bytes as it
 * sent them (any format; the core checks, resizes to the requested size and re-encodes them as
 * JPEG); an answer without an image is `MODEL_BAD_RESPONSE`. The negative prompt always reaches
 * the provider (its own field or folded into the prompt). Errors and aborts as for
 * {@link VisionModel}: `MODEL_TIMEOUT`, `MODEL_UNAVAILABLE`, `VALIDATION_FAILED` on `model`,
 * `MODEL_BAD_RESPONSE`.
 */
export interface ImageGenerator extends Omit<ModelProvider, "maxImageSide"> {
  generate(request: ImageGenerationRequest, options?: ModelCallOptions): Promise<Uint8Array>;
}
