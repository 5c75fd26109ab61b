export {
  classificationAnswerSchema,
  createOpenAiModels,
  dataUrl,
  type OpenAiModelsOptions,
  openAiModelsOptionsSchema,
} from "./create-openai-models.js";
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
