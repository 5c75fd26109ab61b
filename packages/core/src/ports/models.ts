import type { Classifier } from "./classifier.js";
import type { ImageGenerator } from "./image-generator.js";
import type { TextExtractor } from "./text-extractor.js";
import type { VisionModel } from "./vision-model.js";

/**
 * The model ports a pipeline may run on, one per kind of model-backed operation; each is optional
 * (without it, its operations answer `MODEL_NOT_CONFIGURED`). `visualize` uses
 * `vision`, `imagine` uses `generator`, `classify` uses `classifier`, `extract-formatted-text` uses
 * `textExtractor`.
 */
export interface ModelPorts {
  vision?: VisionModel | undefined;
  generator?: ImageGenerator | undefined;
  classifier?: Classifier | undefined;
  textExtractor?: TextExtractor | undefined;
}
