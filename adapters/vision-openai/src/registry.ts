import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { z } from "zod";

/** Names served through the images API by default (the rest go through chat completions). */
export const IMAGE_MODEL_NAMES: readonly string[] = ["sdxl", "flux"];

/** One registry entry: how one API model name reaches its upstream. */
export const modelEntrySchema = z
  .object({
    /** OpenAI-compatible base URL, e.g. `http://localhost:11434/v1` (Ollama). */
    baseUrl: z.url({ protocol: /^https?$/ }),
    /** The upstream model id, e.g. `llava:13b`, `gemini-2.5-flash`, `dall-e-3`. */
    model: z.string().min(1),
    /** The provider key. Local servers (Ollama, vLLM) ignore it. */
    apiKey: z.string().min(1).optional(),
    /** Name of an environment variable holding the key (read once at start); wins over `apiKey`. */
    apiKeyEnv: z.string().min(1).optional(),
    /**
     * `chat` (chat completions with an image part: visualize, classify, extract) or `images` (the
     * images API: imagine). @default `images` for `sdxl` and `flux`, `chat` otherwise
     */
    api: z.enum(["chat", "images"]).optional(),
    /** Per-call timeout, ms. @default the registry's `timeoutMs` */
    timeoutMs: z.number().int().positive().max(600_000).optional(),
    /** Longest side in px of images sent to this model. @default the registry's `maxImageSide` */
    maxImageSide: z.number().int().min(32).max(4096).optional(),
    /** Upper bound on the answer's tokens (`max_tokens`); unset sends none. */
    maxTokens: z.number().int().positive().optional(),
    /**
     * Images API only. `openai`: the OpenAI request (negative prompt folded into the prompt, no
     * seed). `extended`: also sends `negative_prompt` and `seed` body fields, which servers such as
     * LocalAI and many SDXL/Flux gateways read.
     * @default "openai"
     */
    generationFields: z.enum(["openai", "extended"]).default("openai"),
    /** Images API only: send `response_format: "b64_json"` (turn off for gpt-image models). @default true */
    responseFormat: z.boolean().default(true),
  })
  .strict();

/** The model registry of a deployment (server config `models`). */
export const modelRegistrySchema = z
  .object({
    /** API model name (`uform-gen`, `llava`, `gemini`, `sdxl`, `flux`, or any name) → upstream. */
    registry: z.record(z.string().min(1), modelEntrySchema).default({}),
    /** Default model per operation; each must name a registry entry. */
    defaults: z
      .object({
        /** @default "sdxl" (contract P14) */
        imagine: z.string().min(1).optional(),
        /** @default "uform-gen" (contract P15) */
        visualize: z.string().min(1).optional(),
        /** The chat model that classifies; without it classify answers 501 for live keys. */
        classify: z.string().min(1).optional(),
        /**
         * The chat model that extracts text; without it extract-formatted-text answers 501 (the
         * prebuilt server then uses its embedded tesseract extractor instead).
         */
        extract: z.string().min(1).optional(),
      })
      .strict()
      .default({}),
    /** Per-call timeout of every upstream call, ms. @default 30000 */
    timeoutMs: z.number().int().positive().max(600_000).default(30_000),
    /** Longest side in px of images sent to models. @default 1024 */
    maxImageSide: z.number().int().min(32).max(4096).default(1024),
  })
  .strict();

export type ModelEntry = z.output<typeof modelEntrySchema>;
export type ModelRegistryInput = z.input<typeof modelRegistrySchema>;
export type ModelRegistry = z.output<typeof modelRegistrySchema>;

/** A registry entry with everything resolved. */
export interface ResolvedModel {
  name: string;
  api: "chat" | "images";
  baseUrl: string;
  upstreamModel: string;
  apiKey: string;
  timeoutMs: number;
  maxImageSide: number;
  maxTokens: number | undefined;
  generationFields: "openai" | "extended";
  responseFormat: boolean;
}

/**
 * Validates a registry, resolves keys from the environment and checks every default names an entry
 * of the right API. Throws `INVALID_CONFIGURATION` naming every problem.
 */
export function resolveModelRegistry(
  input: unknown,
  environment: NodeJS.ProcessEnv = process.env,
): { models: Map<string, ResolvedModel>; defaults: ModelRegistry["defaults"] } {
  const parsed = modelRegistrySchema.safeParse(input ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "models"}: ${issue.message}`,
    );
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `Invalid model registry: ${problems.join("; ")}`,
    );
  }
  const registry = parsed.data;
  const problems: string[] = [];
  const models = new Map<string, ResolvedModel>();
  for (const [name, entry] of Object.entries(registry.registry)) {
    let apiKey = entry.apiKey;
    if (entry.apiKeyEnv !== undefined) {
      apiKey = environment[entry.apiKeyEnv];
      if (apiKey === undefined || apiKey === "") {
        problems.push(`registry.${name}.apiKeyEnv: the environment variable ${entry.apiKeyEnv} is not set`);
      }
    }
    models.set(name, {
      name,
      api: entry.api ?? (IMAGE_MODEL_NAMES.includes(name) ? "images" : "chat"),
      baseUrl: entry.baseUrl.replace(/\/+$/, ""),
      upstreamModel: entry.model,
      // Local OpenAI-compatible servers need no key, but the client insists on one.
      apiKey: apiKey ?? "unused",
      timeoutMs: entry.timeoutMs ?? registry.timeoutMs,
      maxImageSide: entry.maxImageSide ?? registry.maxImageSide,
      maxTokens: entry.maxTokens,
      generationFields: entry.generationFields,
      responseFormat: entry.responseFormat,
    });
  }
  const wanted: Record<string, "chat" | "images"> = {
    imagine: "images",
    visualize: "chat",
    classify: "chat",
    extract: "chat",
  };
  for (const [operation, name] of Object.entries(registry.defaults)) {
    if (name === undefined) continue;
    const model = models.get(name);
    if (model === undefined) problems.push(`defaults.${operation}: ${name} is not in the registry`);
    else if (model.api !== wanted[operation]) {
      problems.push(
        `defaults.${operation}: ${name} uses the ${model.api} API, ${operation} needs ${wanted[operation]}`,
      );
    }
  }
  if (problems.length > 0) {
    throw new ImagePipelineError(
      ErrorCodes.INVALID_CONFIGURATION,
      `Invalid model registry: ${problems.join("; ")}`,
    );
  }
  return { models, defaults: registry.defaults };
}
