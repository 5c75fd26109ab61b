import {
  type ClassifierAnswer,
  type ClassifierReceived,
  chatCompletion,
  describeClassifierConformance,
  describeImageGeneratorConformance,
  describeVisionModelConformance,
  type GeneratorAnswer,
  type GeneratorReceived,
  imagesResponse,
  type ModelPortTestContext,
  type ModelUpstream,
  type OpenAiCompatibleServer,
  type OpenAiReply,
  type RecordedOpenAiRequest,
  startOpenAiCompatibleServer,
  type UpstreamFault,
  type VisionAnswer,
  type VisionReceived,
} from "@pixport/testing";
import { createOpenAiModels, type ModelRegistryInput } from "../src/index.js";

/**
 * The three model ports against a loopback OpenAI-compatible server, one per test. Each suite
 * speaks in its port's terms; this file translates: what a request carried (the prompt text and
 * the image data URL of a chat completion, the prompt fields of an images request), and the
 * suite's answers and faults as the replies an OpenAI-compatible provider gives.
 */

type Ports = ReturnType<typeof createOpenAiModels>;

/** The reply of an OpenAI-compatible provider that plays `fault` on the chat or images API. */
function faultReply(fault: UpstreamFault, api: "chat" | "images"): OpenAiReply {
  const error = (status: number, message: string, code?: string, headers?: Record<string, string>) => ({
    status,
    json: { error: { message, ...(code === undefined ? {} : { code }) } },
    ...(headers === undefined ? {} : { headers }),
  });
  switch (fault.fault) {
    case "server-error":
      return error(500, "internal error");
    case "connection-lost":
      return { drop: true };
    case "refused": {
      const headers =
        fault.retryAfterSeconds === undefined
          ? undefined
          : { "retry-after": String(fault.retryAfterSeconds) };
      if (fault.reason === "key") return error(401, "Incorrect API key provided", "invalid_api_key", headers);
      const code = fault.reason === "quota" ? "insufficient_quota" : "rate_limit_exceeded";
      return error(429, "refused", code, headers);
    }
    case "rejected-input":
      return error(400, "Invalid image", "invalid_request_error");
    case "hang":
      return { hang: true };
    case "hang-body":
      return { hangBody: true };
    case "malformed":
      return { raw: "<html>Bad gateway</html>" };
    case "empty":
      return api === "chat" ? { json: chatCompletion(null) } : { json: { created: 1, data: [] } };
    case "truncated":
      return api === "chat"
        ? { json: chatCompletion('{"main_label": "Tab', "length") }
        : { raw: '{"created":1,"data":[{"b64_json":"iVBORw0KGgo' };
  }
}

/** The last user message's text and image parts of a chat completion request. */
function chatParts(request: RecordedOpenAiRequest): VisionReceived {
  const content: { type?: string; text?: string; image_url?: { url?: string } }[] =
    request.body?.messages?.at(-1)?.content ?? [];
  const url = content.find((part) => part.type === "image_url")?.image_url?.url ?? "";
  const match = /^data:([^;]+);base64,(.*)$/.exec(url);
  return {
    prompt: content.find((part) => part.type === "text")?.text ?? "",
    mimeType: match?.[1] ?? "",
    image: new Uint8Array(Buffer.from(match?.[2] ?? "", "base64")),
  };
}

/** A suite context over a fresh loopback server: `decode` reads a request, `encode` answers one. */
async function loopbackContext<Port, Received, Answer>(
  pick: (models: Ports) => Port,
  model: string,
  decode: (request: RecordedOpenAiRequest) => Received,
  encode: (answer: Answer) => OpenAiReply,
  api: "chat" | "images",
  generationFields: "openai" | "extended" = "openai",
): Promise<ModelPortTestContext<Port, Received, Answer> & { server: OpenAiCompatibleServer }> {
  const server = await startOpenAiCompatibleServer();
  const entry = { baseUrl: server.baseUrl, apiKey: "sk-test-secret" };
  const registry: ModelRegistryInput = {
    registry: {
      llava: { ...entry, model: "llava:13b" },
      gemini: { ...entry, model: "gemini-2.5-flash" },
      sdxl: { ...entry, model: "sdxl-lightning", generationFields },
    },
    defaults: { visualize: "llava", classify: "gemini", imagine: "sdxl" },
    timeoutMs: 1_000,
  };
  const upstream: ModelUpstream<Received, Answer> = {
    answer(reply) {
      server.setHandler((request) => {
        const outcome = reply(decode(request));
        return typeof outcome === "object" && outcome !== null && "fault" in outcome
          ? faultReply(outcome as UpstreamFault, api)
          : encode(outcome as Answer);
      });
    },
    calls: () =>
      server.requests.map((request) => ({
        received: decode(request),
        abandoned: request.abandoned === true,
      })),
  };
  return { port: pick(createOpenAiModels({ registry })), model, upstream, server };
}

const close = async (context: object) => {
  await (context as { server: OpenAiCompatibleServer }).server.close();
};

describeVisionModelConformance({
  name: "vision-openai (loopback OpenAI-compatible server)",
  create: () =>
    loopbackContext<Ports["vision"], VisionReceived, VisionAnswer>(
      (ports) => ports.vision,
      "llava",
      chatParts,
      (answer) => ({ json: chatCompletion(answer.text) }),
      "chat",
    ),
  cleanup: close,
});

describeClassifierConformance({
  name: "vision-openai (loopback OpenAI-compatible server)",
  create: () =>
    loopbackContext<Ports["classifier"], ClassifierReceived, ClassifierAnswer>(
      (ports) => ports.classifier,
      "gemini",
      (request) => {
        const { image, mimeType } = chatParts(request);
        return { image, mimeType };
      },
      (answer) => ({ json: chatCompletion(JSON.stringify(answer.classification)) }),
      "chat",
    ),
  cleanup: close,
});

for (const fields of ["openai", "extended"] as const) {
  describeImageGeneratorConformance({
    name: `vision-openai (loopback OpenAI-compatible server, ${fields} fields)`,
    create: () =>
      loopbackContext<Ports["generator"], GeneratorReceived, GeneratorAnswer>(
        (ports) => ports.generator,
        "sdxl",
        (request) => ({ prompt: request.body?.prompt ?? "", negativePrompt: request.body?.negative_prompt }),
        (answer) => ({ json: imagesResponse(answer.image) }),
        "images",
        fields,
      ),
    cleanup: close,
  });
}
