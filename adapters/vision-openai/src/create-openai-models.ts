import type { Logger, ModelPorts } from "@pixport/core";
import { parseOptions } from "@pixport/core/adapter-kit";
import { z } from "zod";
import type { ModelCallContext } from "./model-call.js";
import {
  createClassifier,
  createImageGenerator,
  createTextExtractor,
  createVisionModel,
} from "./model-ports.js";
import { type ModelRegistryInput, resolveModelRegistry } from "./registry.js";

/** Options of {@link createOpenAiModels} (unknown keys are refused; the registry is checked by {@link resolveModelRegistry}). */
export const openAiModelsOptionsSchema = z
  .object({
    /** The registry (server config `models`). */
    registry: z.custom<ModelRegistryInput>((value) => typeof value === "object" && value !== null, {
      message: "must be a model registry object",
    }),
    /** Where `apiKeyEnv` keys are read. @default process.env */
    environment: z.record(z.string(), z.string().optional()).optional(),
    /** Upstream failures are logged here (status and model; never keys, prompts or answers). */
    logger: z
      .custom<Logger>((value) => typeof value === "object" && value !== null, { message: "must be a Logger" })
      .optional(),
    /** Seconds in `Retry-After` when the provider refuses without one. @default 30 */
    defaultRetryAfterSeconds: z.number().int().min(1).max(86_400).default(30),
  })
  .strict();

/** Options of {@link createOpenAiModels}; see {@link openAiModelsOptionsSchema}. */
export type OpenAiModelsOptions = z.input<typeof openAiModelsOptionsSchema>;

/**
 * The four model ports over OpenAI-compatible APIs, one client per registry entry (created with
 * `maxRetries: 0`: no SDK retries on the request path). Every call runs under the entry's timeout
 * (an `AbortSignal` that also covers reading the body, plus a hard deadline that settles the call
 * even if the SDK did not), and upstream failures become pixport errors:
 * - timeout → `MODEL_TIMEOUT` (504);
 * - 429, 401, 403 → `MODEL_UNAVAILABLE` (503, `Retry-After` from the provider or the default);
 * - 400, 413, 422 → `VALIDATION_FAILED` (422) on `model` (the provider rejected the input);
 * - 5xx, 404, connection errors, malformed, empty, truncated or refused answers → `MODEL_BAD_RESPONSE` (502).
 *
 * @example
 * ```ts
 * const models = createOpenAiModels({
 *   registry: {
 *     registry: { vision: { baseUrl: "https://api.openai.com/v1", model: "gpt-4o-mini", apiKeyEnv: "OPENAI_API_KEY" } },
 *     defaults: { visualize: "vision", classify: "vision", extract: "vision" },
 *   },
 * });
 * const pipeline = createImagePipeline({ ...deps, models });
 * ```
 */
export function createOpenAiModels(input: OpenAiModelsOptions): Required<ModelPorts> {
  const options = parseOptions(openAiModelsOptionsSchema, input, "createOpenAiModels");
  const { models, defaults } = resolveModelRegistry(options.registry, options.environment);
  const context: ModelCallContext = {
    models,
    clients: new Map(),
    logger: options.logger,
    defaultRetryAfterSeconds: options.defaultRetryAfterSeconds,
  };
  return {
    vision: createVisionModel(context, defaults),
    generator: createImageGenerator(context, defaults),
    classifier: createClassifier(context, defaults),
    textExtractor: createTextExtractor(context, defaults),
  };
}
