import type { ModelCallOptions, ModelImage, ModelProvider } from "./vision-model.js";

/** Output format of `POST /v1/images/{id}/extract-formatted-text`. */
export type TextFormat = "markdown" | "plain";

/**
 * LLM-backed text extraction keeping the document's layout. Resolves the extracted text in
 * `format` (an empty string when the image holds no text). Errors as for {@link VisionModel}.
 */
export interface TextExtractor extends ModelProvider {
  extract(
    request: { model: string; image: ModelImage; format: TextFormat },
    options?: ModelCallOptions,
  ): Promise<string>;
}
