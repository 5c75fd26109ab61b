export {
  createOpenAiModels,
  type OpenAiModelsOptions,
  openAiModelsOptionsSchema,
} from "./create-openai-models.js";
export { dataUrl } from "./model-call.js";
export { classificationAnswerSchema } from "./model-ports.js";
export {
  IMAGE_MODEL_NAMES,
  type ModelEntry,
  type ModelRegistry,
  type ModelRegistryInput,
  modelEntrySchema,
  modelRegistrySchema,
  type ResolvedModel,
  resolveModelRegistry,
} from "./registry.js";
