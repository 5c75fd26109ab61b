import { ErrorCodes, type VisionModel } from "@pixport/core";
import { describe, expect, it } from "vitest";
import { Colors, solidImage } from "../fixtures/images.js";
import {
  conformanceModelImage,
  contextRunner,
  describeModelDeclarations,
  describeUpstreamFaults,
  type ModelPortConformanceOptions,
  type ModelPortTestContext,
  modelFailure,
} from "./model-ports.js";

/** What a vision call carried to the provider. */
export interface VisionReceived {
  /** The user's prompt as the provider received it (an adapter may add its own instructions around it). */
  prompt: string;
  /** The image bytes the provider received, decoded from the provider's wrapping (e.g. a data URL). */
  image: Uint8Array;
  /** The image's declared media type at the provider. */
  mimeType: string;
}

/** A vision answer the stand-in provider gives: the model's text, exactly. */
export interface VisionAnswer {
  text: string;
}

/** Options of {@link describeVisionModelConformance}. */
export type VisionModelConformanceOptions = ModelPortConformanceOptions<
  VisionModel,
  VisionReceived,
  VisionAnswer
>;
/** What `create` gives {@link describeVisionModelConformance}. */
export type VisionModelTestContext = ModelPortTestContext<VisionModel, VisionReceived, VisionAnswer>;

/**
 * The behaviour every VisionModel must show (see the port's TSDoc), against a stand-in provider
 * the adapter's test scripts ({@link ModelUpstream}): the image bytes and the prompt reach the
 * provider unchanged; the answer comes back trimmed, to the caller that asked; an empty answer and
 * every provider failure become the port's errors (`MODEL_BAD_RESPONSE`, `MODEL_UNAVAILABLE` with
 * a retry time, `VALIDATION_FAILED` on `model`, `MODEL_TIMEOUT`); aborts end the upstream call.
 */
export function describeVisionModelConformance(options: VisionModelConformanceOptions): void {
  const withContext = contextRunner(options);
  const describeCall = async (port: VisionModel, model: string, prompt = "What is shown?") =>
    port.describe({ model, image: await conformanceModelImage(), prompt });
  describe(`VisionModel conformance: ${options.name}`, () => {
    describeModelDeclarations(withContext, true);

    it(
      "sends the image bytes and the prompt unchanged, and answers the provider's text trimmed",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ text: "  A red rectangle.\n" }));
        const image = await conformanceModelImage();
        const answer = await port.describe({ model, image, prompt: "Which colour is it?" });
        expect(answer).toBe("A red rectangle.");
        expect(upstream.calls()).toHaveLength(1);
        const { received } = upstream.calls()[0]!;
        expect(
          Buffer.from(received.image).equals(Buffer.from(image.data)),
          "the bytes as the core encoded them",
        ).toBe(true);
        expect(received.mimeType).toBe("image/jpeg");
        expect(received.prompt).toContain("Which colour is it?");
      }),
    );

    it(
      "answers each of several concurrent calls with its own answer",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer((received) => ({ text: `answer to ${/question \d+/.exec(received.prompt)?.[0]}` }));
        const questions = Array.from({ length: 6 }, (_, index) => `question ${index}`);
        const answers = await Promise.all(questions.map((question) => describeCall(port, model, question)));
        expect(answers).toEqual(questions.map((question) => `answer to ${question}`));
      }),
    );

    it(
      "sends a PNG as a PNG",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ text: "green" }));
        const data = await solidImage(16, 16, Colors.green, "png");
        await port.describe({
          model,
          image: { data, mimeType: "image/png", width: 16, height: 16 },
          prompt: "?",
        });
        const { received } = upstream.calls()[0]!;
        expect(received.mimeType).toBe("image/png");
        expect(Buffer.from(received.image).equals(Buffer.from(data))).toBe(true);
      }),
    );

    it.each(["", "   \n\t "])("answers MODEL_BAD_RESPONSE for an empty answer (%j)", async (text) => {
      await withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ text }));
        expect((await modelFailure(describeCall(port, model))).code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
      })();
    });

    describeUpstreamFaults(withContext, async (port, model, callOptions) =>
      port.describe({ model, image: await conformanceModelImage(), prompt: "What is shown?" }, callOptions),
    );
  });
}
