import { ErrorCodes, type ImagePipelineError, isImagePipelineError, type ModelImage } from "@pixport/core";
import {
  Colors,
  chatCompletion,
  imagesResponse,
  type OpenAiCompatibleServer,
  solidImage,
  startOpenAiCompatibleServer,
} from "@pixport/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createOpenAiModels, type ModelRegistryInput, resolveModelRegistry } from "../src/index.js";

let server: OpenAiCompatibleServer;
let image: ModelImage;

beforeAll(async () => {
  server = await startOpenAiCompatibleServer();
  image = {
    data: await solidImage(40, 20, Colors.red, "jpeg"),
    mimeType: "image/jpeg",
    width: 40,
    height: 20,
  };
});
afterAll(() => server.close());
beforeEach(() => server.reset());

function registry(overrides: Partial<ModelRegistryInput> = {}): ModelRegistryInput {
  const entry = (model: string) => ({ baseUrl: server.baseUrl, model, apiKey: "sk-test-secret" });
  return {
    registry: {
      "uform-gen": entry("uform-gen2-qwen-500m"),
      llava: entry("llava:13b"),
      gemini: entry("gemini-2.5-flash"),
      sdxl: { ...entry("sdxl-lightning"), generationFields: "extended" },
      flux: entry("flux-schnell"),
    },
    defaults: { classify: "gemini", extract: "llava" },
    timeoutMs: 2_000,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ImagePipelineError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isImagePipelineError(error)) throw new Error(`expected a pixport error, got ${String(error)}`);
  return error;
}

const ports = () => createOpenAiModels({ registry: registry() });

describe("request bodies", () => {
  it.each([
    ["uform-gen", "uform-gen2-qwen-500m"],
    ["llava", "llava:13b"],
    ["gemini", "gemini-2.5-flash"],
  ])(
    "visualize with %s sends the upstream id, the prompt and the image as a data URL",
    async (name, upstream) => {
      server.enqueue({ json: chatCompletion("  A red square.  ") });
      const answer = await ports().vision.describe({ model: name, image, prompt: "What colour?" });
      expect(answer).toBe("A red square.");
      expect(server.requests).toHaveLength(1);
      const request = server.requests[0]!;
      expect(request.path).toBe("/chat/completions");
      expect(request.headers.authorization).toBe("Bearer sk-test-secret");
      expect(request.body.model).toBe(upstream);
      expect(request.body.stream).toBeUndefined();
      expect(request.body.temperature).toBe(0);
      const user = request.body.messages.at(-1);
      expect(user.role).toBe("user");
      expect(user.content).toEqual([
        { type: "text", text: "What colour?" },
        {
          type: "image_url",
          image_url: { url: `data:image/jpeg;base64,${Buffer.from(image.data).toString("base64")}` },
        },
      ]);
      expect(request.body.messages[0].role).toBe("system");
    },
  );

  it("classify asks for a JSON object from the configured classifier model and validates the answer", async () => {
    const answer = {
      main_label: "Tabby",
      main_score: 0.43,
      secondary_labels: [
        { label: "Tiger Cat", score: 0.375 },
        { label: "Egyptian Cat", score: 0.1 },
        { label: "Lynx", score: 0.05 },
        { label: "Persian Cat", score: 0.01 },
      ],
      extra: "dropped",
    };
    server.enqueue({ json: chatCompletion(`\`\`\`json\n${JSON.stringify(answer)}\n\`\`\``) });
    const models = ports();
    expect(models.classifier.models).toEqual(["gemini"]);
    const result = await models.classifier.classify({ model: "gemini", image });
    const { extra: _extra, ...expected } = answer;
    expect(result).toEqual(expected);
    const body = server.requests[0]!.body;
    expect(body.model).toBe("gemini-2.5-flash");
    expect(body.response_format).toEqual({ type: "json_object" });
    expect(body.messages[0].content[1].image_url.url).toMatch(/^data:image\/jpeg;base64,/);
  });

  it.each(["markdown", "plain"] as const)(
    "extract (%s) sends a format-specific instruction and strips a code fence",
    async (format) => {
      server.enqueue({ json: chatCompletion("```\n# Title\n\nBody\n```") });
      const content = await ports().textExtractor.extract({ model: "llava", image, format });
      expect(content).toBe("# Title\n\nBody");
      const body = server.requests[0]!.body;
      expect(body.model).toBe("llava:13b");
      expect(body.messages[0].content[0].text).toContain(format === "markdown" ? "Markdown" : "plain text");
    },
  );

  it("imagine (extended fields) sends prompt, negative_prompt, seed, size and b64_json", async () => {
    const png = await solidImage(8, 8, Colors.green, "png");
    server.enqueue({ json: imagesResponse(png) });
    const bytes = await ports().generator.generate({
      model: "sdxl",
      prompt: "a lighthouse",
      negativePrompt: "people",
      seed: 42,
      width: 1024,
      height: 1024,
    });
    expect(Buffer.from(bytes).equals(Buffer.from(png))).toBe(true);
    const request = server.requests[0]!;
    expect(request.path).toBe("/images/generations");
    expect(request.body).toEqual({
      model: "sdxl-lightning",
      prompt: "a lighthouse",
      n: 1,
      size: "1024x1024",
      response_format: "b64_json",
      negative_prompt: "people",
      seed: 42,
    });
  });

  it("imagine (openai fields) folds the negative prompt into the prompt and sends no seed", async () => {
    server.enqueue({ json: imagesResponse(await solidImage(8, 8, Colors.green, "png")) });
    await ports().generator.generate({
      model: "flux",
      prompt: "a lighthouse",
      negativePrompt: "people",
      seed: 7,
      width: 1024,
      height: 1024,
    });
    expect(server.requests[0]!.body).toEqual({
      model: "flux-schnell",
      prompt: "a lighthouse\n\nAvoid: people",
      n: 1,
      size: "1024x1024",
      response_format: "b64_json",
    });
  });

  it("lists chat models for visualize and image models for imagine", () => {
    const models = ports();
    expect([...models.vision.models].sort()).toEqual(["gemini", "llava", "uform-gen"]);
    expect([...models.generator.models].sort()).toEqual(["flux", "sdxl"]);
    expect(models.vision.maxImageSide?.("llava")).toBe(1024);
  });
});

describe("upstream faults", () => {
  it("a hanging upstream is answered with MODEL_TIMEOUT within the timeout, without retries", async () => {
    server.enqueue({ hang: true });
    const models = createOpenAiModels({ registry: registry({ timeoutMs: 300 }) });
    const started = Date.now();
    const error = await failure(models.vision.describe({ model: "llava", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_TIMEOUT);
    expect(error.message).toContain("llava");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(server.requests).toHaveLength(1);
  });

  it("a body that never finishes is a timeout too", async () => {
    server.enqueue({ hangBody: true });
    const models = createOpenAiModels({ registry: registry({ timeoutMs: 300 }) });
    const error = await failure(models.vision.describe({ model: "llava", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_TIMEOUT);
  });

  it.each([500, 502, 503])("upstream %i is MODEL_BAD_RESPONSE after exactly one call", async (status) => {
    server.enqueue({ status, json: { error: { message: "boom" } } });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
    expect(server.requests).toHaveLength(1);
  });

  it("upstream 429 is MODEL_UNAVAILABLE with the provider's Retry-After, not retried", async () => {
    server.enqueue({
      status: 429,
      headers: { "retry-after": "17" },
      json: { error: { message: "slow down" } },
    });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
    expect(error.retryAfterSeconds).toBe(17);
    expect(server.requests).toHaveLength(1);
  });

  it("upstream 401 (our key) is MODEL_UNAVAILABLE and the message does not carry the key", async () => {
    server.enqueue({ status: 401, json: { error: { message: "bad key sk-test-secret" } } });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_UNAVAILABLE);
    expect(error.message).not.toContain("sk-test");
    expect(error.retryAfterSeconds).toBe(30);
  });

  it("upstream 400 is a 422 on model", async () => {
    server.enqueue({ status: 400, json: { error: { message: "image too large" } } });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.VALIDATION_FAILED);
    expect(error.issues[0]?.path).toBe("model");
  });

  it("malformed JSON from upstream is MODEL_BAD_RESPONSE", async () => {
    server.enqueue({ raw: "{not json" });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
  });

  it.each([
    ["no choices", { id: "x", choices: [] }],
    ["empty text", chatCompletion("   ")],
    ["null content", chatCompletion(null)],
    ["truncated", chatCompletion("partial", "length")],
    ["filtered", chatCompletion("x", "content_filter")],
    ["refusal", chatCompletion("", "stop", { refusal: "I can't" })],
  ])("an unusable chat answer (%s) is MODEL_BAD_RESPONSE", async (_why, json) => {
    server.enqueue({ json });
    const error = await failure(ports().vision.describe({ model: "gemini", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
  });

  it.each([
    ["not JSON", "Tabby, probably"],
    ["3 secondaries", JSON.stringify({ main_label: "A", main_score: 0.5, secondary_labels: [1, 2, 3] })],
    [
      "score above 1",
      JSON.stringify({
        main_label: "A",
        main_score: 1.5,
        secondary_labels: Array.from({ length: 4 }, () => ({ label: "B", score: 0.1 })),
      }),
    ],
    [
      "empty label",
      JSON.stringify({
        main_label: "",
        main_score: 0.5,
        secondary_labels: Array.from({ length: 4 }, () => ({ label: "B", score: 0.1 })),
      }),
    ],
    [
      "string score",
      JSON.stringify({
        main_label: "A",
        main_score: "0.5",
        secondary_labels: Array.from({ length: 4 }, () => ({ label: "B", score: 0.1 })),
      }),
    ],
  ])("a schema-invalid classification (%s) is MODEL_BAD_RESPONSE", async (_why, content) => {
    server.enqueue({ json: chatCompletion(content) });
    const error = await failure(ports().classifier.classify({ model: "gemini", image }));
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
  });

  it.each([
    ["no data", { created: 1, data: [] }],
    ["url instead of b64", { created: 1, data: [{ url: "https://example.com/a.png" }] }],
    ["not base64", { created: 1, data: [{ b64_json: "***" }] }],
  ])("an unusable images answer (%s) is MODEL_BAD_RESPONSE", async (_why, json) => {
    server.enqueue({ json });
    const error = await failure(
      ports().generator.generate({ model: "flux", prompt: "x", width: 1024, height: 1024 }),
    );
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
  });

  it("an unreachable provider is MODEL_BAD_RESPONSE, quickly", async () => {
    const models = createOpenAiModels({
      registry: { registry: { llava: { baseUrl: "http://127.0.0.1:1/v1", model: "llava" } } },
    });
    const error = await failure(models.vision.describe({ model: "llava", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
  });

  it("a caller abort stops the upstream call", async () => {
    server.enqueue({ hang: true });
    const controller = new AbortController();
    const pending = failure(
      ports().vision.describe({ model: "llava", image, prompt: "hi" }, { signal: controller.signal }),
    );
    setTimeout(() => controller.abort(), 50);
    const error = await pending;
    expect(error.code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
    expect(error.message).toContain("aborted");
  });
});

describe("configuration", () => {
  it("an unknown model name is MODEL_NOT_CONFIGURED naming it", async () => {
    const error = await failure(ports().vision.describe({ model: "gpt-9", image, prompt: "hi" }));
    expect(error.code).toBe(ErrorCodes.MODEL_NOT_CONFIGURED);
    expect(error.message).toContain("gpt-9");
    expect(server.requests).toHaveLength(0);
  });

  it("defaults must name registry entries of the right API", () => {
    expect(() => resolveModelRegistry({ registry: {}, defaults: { visualize: "llava" } })).toThrow(
      /defaults.visualize: llava is not in the registry/,
    );
    expect(() =>
      resolveModelRegistry({
        registry: { sdxl: { baseUrl: "http://127.0.0.1:1/v1", model: "x" } },
        defaults: { classify: "sdxl" },
      }),
    ).toThrow(/classify needs chat/);
  });

  it("apiKeyEnv reads the key from the environment and fails fast when it is missing", () => {
    const input = {
      registry: { gemini: { baseUrl: "http://127.0.0.1:1/v1", model: "g", apiKeyEnv: "GKEY" } },
    };
    expect(resolveModelRegistry(input, { GKEY: "abc" }).models.get("gemini")?.apiKey).toBe("abc");
    expect(() => resolveModelRegistry(input, {})).toThrow(/GKEY is not set/);
  });

  it("rejects unknown fields and non-http base URLs", () => {
    expect(() => resolveModelRegistry({ registry: { a: { baseUrl: "ftp://x/v1", model: "m" } } })).toThrow(
      /INVALID|registry.a.baseUrl/,
    );
    expect(() => resolveModelRegistry({ registyr: {} })).toThrow(/Invalid model registry/);
  });
});
