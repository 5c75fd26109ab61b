import {
  ErrorCodes,
  ImagePipelineError,
  isImagePipelineError,
  type Logger,
  type ModelCallOptions,
  type ModelImage,
} from "@pixport/core";
import OpenAI, { APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import type { ResolvedModel } from "./registry.js";

/** What every upstream call of one `createOpenAiModels` instance shares. */
export interface ModelCallContext {
  /** The resolved registry, by name. */
  readonly models: ReadonlyMap<string, ResolvedModel>;
  /** One client per registry entry, created on first use. */
  readonly clients: Map<string, OpenAI>;
  readonly logger: Logger | undefined;
  /** Seconds in `Retry-After` when the provider refuses without one. */
  readonly defaultRetryAfterSeconds: number;
}

/** The data URL of a model image. */
export function dataUrl(image: ModelImage): string {
  return `data:${image.mimeType};base64,${Buffer.from(image.data).toString("base64")}`;
}

/** The registry entry called `name`; `MODEL_NOT_CONFIGURED` when there is none. */
export function modelEntry(context: ModelCallContext, name: string): ResolvedModel {
  const model = context.models.get(name);
  if (model === undefined) {
    throw new ImagePipelineError(ErrorCodes.MODEL_NOT_CONFIGURED, `The model ${name} is not configured.`);
  }
  return model;
}

function clientFor(context: ModelCallContext, model: ResolvedModel): OpenAI {
  let client = context.clients.get(model.name);
  if (client === undefined) {
    client = new OpenAI({
      baseURL: model.baseUrl,
      apiKey: model.apiKey,
      maxRetries: 0,
      timeout: model.timeoutMs,
    });
    context.clients.set(model.name, client);
  }
  return client;
}

/** Runs one upstream call under the model's deadline and maps every failure. */
export async function callModel<T>(
  context: ModelCallContext,
  model: ResolvedModel,
  callOptions: ModelCallOptions | undefined,
  run: (client: OpenAI, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeout = new AbortController();
  const signals = [timeout.signal];
  if (callOptions?.signal !== undefined) signals.push(callOptions.signal);
  const signal = AbortSignal.any(signals);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timeout.abort();
      reject(timedOut(model));
    }, model.timeoutMs);
  });
  try {
    return await Promise.race([run(clientFor(context, model), signal), deadline]);
  } catch (error) {
    throw mapModelError(context, error, model, timeout.signal.aborted);
  } finally {
    clearTimeout(timer);
  }
}

const timedOut = (model: ResolvedModel) =>
  new ImagePipelineError(
    ErrorCodes.MODEL_TIMEOUT,
    `The model ${model.name} did not answer within ${model.timeoutMs} ms.`,
  );

function mapModelError(
  context: ModelCallContext,
  error: unknown,
  model: ResolvedModel,
  timedOutByUs: boolean,
): ImagePipelineError {
  if (isImagePipelineError(error)) return error;
  if (timedOutByUs || error instanceof APIConnectionTimeoutError) return timedOut(model);
  if (error instanceof APIUserAbortError) {
    return new ImagePipelineError(
      ErrorCodes.MODEL_BAD_RESPONSE,
      `The call to the model ${model.name} was aborted.`,
      {
        cause: error,
      },
    );
  }
  if (error instanceof APIError && error.status !== undefined) {
    context.logger?.warn?.("model provider error", { model: model.name, status: error.status });
    return mapStatusError(context, error, model, error.status);
  }
  context.logger?.warn?.("model provider error", { model: model.name, error: String(error) });
  return new ImagePipelineError(ErrorCodes.MODEL_BAD_RESPONSE, `The model ${model.name} failed.`, {
    cause: error,
  });
}

/** An upstream HTTP status as a pixport error. */
function mapStatusError(
  context: ModelCallContext,
  error: APIError,
  model: ResolvedModel,
  status: number,
): ImagePipelineError {
  if (status === 429 || status === 401 || status === 403) {
    const header = error.headers?.get("retry-after");
    const seconds =
      header !== null && header !== undefined && /^\d+$/.test(header)
        ? Number(header)
        : context.defaultRetryAfterSeconds;
    return new ImagePipelineError(
      ErrorCodes.MODEL_UNAVAILABLE,
      `The model ${model.name} is temporarily unavailable; retry later.`,
      { retryAfterSeconds: Math.min(Math.max(seconds, 1), 3600), cause: error },
    );
  }
  if (status === 400 || status === 413 || status === 422) {
    return new ImagePipelineError(ErrorCodes.VALIDATION_FAILED, `model ${model.name} rejected the request`, {
      issues: [{ path: "model", message: `${model.name} rejected the request (the image or the prompt)` }],
      cause: error,
    });
  }
  return new ImagePipelineError(
    ErrorCodes.MODEL_BAD_RESPONSE,
    `The model ${model.name} failed (upstream status ${status}).`,
    { cause: error },
  );
}

/** `MODEL_BAD_RESPONSE` for an answer that arrived but cannot be used. */
export const badAnswer = (model: ResolvedModel, why: string) =>
  new ImagePipelineError(
    ErrorCodes.MODEL_BAD_RESPONSE,
    `The model ${model.name} gave an unusable answer (${why}).`,
  );

/** One chat completion request with an image part. */
export interface ChatRequest {
  /** The registry entry's name. */
  readonly name: string;
  readonly image: ModelImage;
  readonly prompt: string;
  readonly system?: string | undefined;
  /** Asks for a JSON object answer. */
  readonly json: boolean;
}

/** One chat completion with an image part; resolves the answer text. */
export async function chatAnswer(
  context: ModelCallContext,
  request: ChatRequest,
  callOptions: ModelCallOptions | undefined,
): Promise<string> {
  const model = modelEntry(context, request.name);
  const body: ChatCompletionCreateParamsNonStreaming = {
    model: model.upstreamModel,
    messages: [
      ...(request.system === undefined ? [] : [{ role: "system" as const, content: request.system }]),
      {
        role: "user",
        content: [
          { type: "text", text: request.prompt },
          { type: "image_url", image_url: { url: dataUrl(request.image) } },
        ],
      },
    ],
    temperature: 0,
    ...(model.maxTokens === undefined ? {} : { max_tokens: model.maxTokens }),
    ...(request.json ? { response_format: { type: "json_object" as const } } : {}),
  };
  const completion = await callModel(context, model, callOptions, (client, signal) =>
    client.chat.completions.create(body, { signal, maxRetries: 0, timeout: model.timeoutMs }),
  );
  const choice = completion?.choices?.[0];
  if (choice === undefined) throw badAnswer(model, "no choices");
  if (choice.finish_reason === "length" || choice.finish_reason === "content_filter") {
    throw badAnswer(model, `finish_reason ${choice.finish_reason}`);
  }
  if (typeof choice.message?.refusal === "string" && choice.message.refusal !== "") {
    throw badAnswer(model, "refused");
  }
  const content = choice.message?.content;
  if (typeof content !== "string") throw badAnswer(model, "no text content");
  return content.trim();
}
