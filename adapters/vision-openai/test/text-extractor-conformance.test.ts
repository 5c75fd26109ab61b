import { sniffImageFormat, type TextFormat } from "@pixport/core";
import {
  Colors,
  chatCompletion,
  describeTextExtractorConformance,
  type OpenAiCompatibleServer,
  type OpenAiReply,
  type RecordedOpenAiRequest,
  renderDocument,
  solidImage,
  startOpenAiCompatibleServer,
  type TextExtractorConformanceContext,
} from "@pixport/testing";
import { expect, it } from "vitest";
import { createOpenAiModels } from "../src/index.js";

/**
 * The LLM extractor against a loopback OpenAI-compatible server whose stand-in model answers what
 * the request's image really shows: it decodes the data URL (its declared type must match the
 * bytes), identifies the suite document by its pixels (`transcribe`) and answers that document's
 * source text in the format the prompt asked for (markdown wrapped in a code fence, as models
 * often do), or nothing for an image without one. The suite then checks this adapter's plumbing:
 * the image out, the format-specific prompt, the answer back to the right concurrent caller, an
 * empty answer as "" and the abort path. OCR quality itself is the tesseract suite's subject.
 */
let server: OpenAiCompatibleServer | undefined;
let suiteContext: TextExtractorConformanceContext | undefined;

function standInModel(context: TextExtractorConformanceContext) {
  const refuse = (message: string): OpenAiReply => ({ status: 400, json: { error: { message } } });
  return async (request: RecordedOpenAiRequest): Promise<OpenAiReply> => {
    if (request.path !== "/chat/completions") return refuse(`unexpected path ${request.path}`);
    const content = request.body?.messages?.at(-1)?.content;
    if (!Array.isArray(content)) return refuse("no user message parts");
    const prompt: unknown = content.find((part: { type?: string }) => part.type === "text")?.text;
    const url: unknown = content.find((part: { type?: string }) => part.type === "image_url")?.image_url?.url;
    const dataUrl =
      typeof url === "string" ? /^data:(image\/[a-z]+);base64,([A-Za-z0-9+/=]+)$/.exec(url) : null;
    if (dataUrl === null) return refuse("no image data URL");
    const bytes = new Uint8Array(Buffer.from(dataUrl[2]!, "base64"));
    if (`image/${sniffImageFormat(bytes)}` !== dataUrl[1])
      return refuse("data URL type does not match the bytes");
    const format: TextFormat | undefined =
      typeof prompt !== "string"
        ? undefined
        : /\bas Markdown\b/.test(prompt)
          ? "markdown"
          : /\bas plain text\b/.test(prompt)
            ? "plain"
            : undefined;
    if (format === undefined) return refuse("the prompt names no output format");
    const text = await context.transcribe(bytes, format);
    const answer = format === "markdown" && text !== "" ? `\`\`\`markdown\n${text}\n\`\`\`` : text;
    return { json: chatCompletion(answer) };
  };
}

describeTextExtractorConformance({
  name: "vision-openai (loopback OpenAI-compatible server)",
  async create(context) {
    suiteContext = context;
    server = await startOpenAiCompatibleServer();
    server.setHandler(standInModel(context));
    return createOpenAiModels({
      registry: {
        registry: { llava: { baseUrl: server.baseUrl, model: "llava:13b", apiKey: "sk-test-secret" } },
        defaults: { extract: "llava" },
        timeoutMs: 10_000,
      },
    }).textExtractor;
  },
  close: async () => {
    await server?.close();
    server = undefined;
  },
  capabilities: { abort: true, emptyWithoutText: true, extraInputFormats: ["png", "webp"] },
  extraTests: (context) => {
    it("sends every extraction to the configured upstream model, and nothing for an aborted call", async () => {
      const sent = server!.requests.length;
      const document = context.documents[0]!;
      const image = {
        data: document.data,
        mimeType: "image/jpeg" as const,
        width: document.width,
        height: document.height,
      };
      const controller = new AbortController();
      controller.abort(new Error("client went away"));
      await expect(
        context.extractor.extract(
          { model: context.model, image, format: "plain" },
          { signal: controller.signal },
        ),
      ).rejects.toBeDefined();
      expect(server!.requests).toHaveLength(sent);
      await context.extractor.extract({ model: context.model, image, format: "plain" });
      expect(server!.requests).toHaveLength(sent + 1);
      expect(server!.requests.every((request) => request.body?.model === "llava:13b")).toBe(true);
    });

    it("the stand-in model answers by the pixels of the image, not by the call", async () => {
      const [memo, report] = context.documents;
      // The memo re-encoded as a low-quality WebP is still the memo; another document or a blank is not.
      const memoAgain = await renderDocument(memo!.spec, { format: "webp", quality: 50 });
      const blank = await solidImage(memo!.width, memo!.height, Colors.white, "jpeg");
      expect(await suiteContext!.transcribe(memoAgain.data, "markdown")).toBe(memo!.markdown);
      expect(await suiteContext!.transcribe(memo!.data, "plain")).toBe(memo!.plain);
      expect(await suiteContext!.transcribe(report!.data, "markdown")).toBe(report!.markdown);
      expect(await suiteContext!.transcribe(blank, "markdown")).toBe("");
    });
  },
});
