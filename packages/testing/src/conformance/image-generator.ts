import type { ImageGenerationRequest, ImageGenerator } from "@pixport/core";
import { describe, expect, it } from "vitest";
import { Colors, solidImage } from "../fixtures/images.js";
import {
  contextRunner,
  describeModelDeclarations,
  describeUpstreamFaults,
  type ModelPortConformanceOptions,
  type ModelPortTestContext,
} from "./model-ports.js";

/** What a generation call carried to the provider. */
export interface GeneratorReceived {
  /** The prompt field as the provider received it. */
  prompt: string;
  /** The provider's own negative-prompt field, when it has one and the adapter sent it. */
  negativePrompt?: string | undefined;
}

/** An image the stand-in provider answers: encoded bytes, which the adapter's test wraps as the provider does. */
export interface GeneratorAnswer {
  image: Uint8Array;
}

/** Options of {@link describeImageGeneratorConformance}. */
export type ImageGeneratorConformanceOptions = ModelPortConformanceOptions<
  ImageGenerator,
  GeneratorReceived,
  GeneratorAnswer
>;
/** What `create` gives {@link describeImageGeneratorConformance}. */
export type ImageGeneratorTestContext = ModelPortTestContext<
  ImageGenerator,
  GeneratorReceived,
  GeneratorAnswer
>;

const request = (model: string, prompt = "a lighthouse at dusk"): ImageGenerationRequest => ({
  model,
  prompt,
  width: 512,
  height: 512,
});

/**
 * The behaviour every ImageGenerator must show (see the port's TSDoc), against a stand-in provider
 * the adapter's test scripts: the prompt reaches the provider, and so does the negative prompt (in
 * its own field, or folded into the prompt); the provider's image bytes come back unchanged, to
 * the caller that asked; an answer without an image and every provider failure become the port's
 * errors; timeouts and aborts as for every model port.
 */
export function describeImageGeneratorConformance(options: ImageGeneratorConformanceOptions): void {
  const withContext = contextRunner(options);
  describe(`ImageGenerator conformance: ${options.name}`, () => {
    describeModelDeclarations(withContext, false);

    it(
      "sends the prompt and answers the provider's image bytes unchanged",
      withContext(async ({ port, model, upstream }) => {
        const png = await solidImage(8, 8, Colors.green, "png");
        upstream.answer(() => ({ image: png }));
        const bytes = await port.generate(request(model, "a green square"));
        expect(Buffer.from(bytes).equals(Buffer.from(png))).toBe(true);
        expect(upstream.calls()).toHaveLength(1);
        expect(upstream.calls()[0]!.received.prompt).toContain("a green square");
      }),
    );

    it(
      "hands the negative prompt to the provider, in its own field or folded into the prompt",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ image: Uint8Array.of(1, 2, 3) }));
        await port.generate({ ...request(model, "a beach"), negativePrompt: "people, text", seed: 42 });
        const { received } = upstream.calls()[0]!;
        expect(received.prompt).toContain("a beach");
        const carried =
          received.negativePrompt === "people, text" || received.prompt.includes("people, text");
        expect(carried, `negative prompt lost: ${JSON.stringify(received)}`).toBe(true);
      }),
    );

    it(
      "answers each of several concurrent calls with its own image",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer((received) => ({ image: Buffer.from(`image for ${received.prompt}`) }));
        const prompts = Array.from({ length: 6 }, (_, index) => `prompt ${index}`);
        const images = await Promise.all(prompts.map((prompt) => port.generate(request(model, prompt))));
        expect(images.map((bytes) => Buffer.from(bytes).toString())).toEqual(
          prompts.map((prompt) => `image for ${prompt}`),
        );
      }),
    );

    describeUpstreamFaults(withContext, (port, model, callOptions) =>
      port.generate(request(model), callOptions),
    );
  });
}
