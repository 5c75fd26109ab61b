import { type Classification, type Classifier, ErrorCodes } from "@pixport/core";
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

/** What a classify call carried to the provider. */
export interface ClassifierReceived {
  /** The image bytes the provider received, decoded from the provider's wrapping. */
  image: Uint8Array;
  mimeType: string;
}

/**
 * A classification the stand-in provider answers: any JSON value, which the adapter's test sends
 * in the provider's answer format (e.g. as the model's JSON text). The suite also sends values that
 * break the {@link Classification} schema.
 */
export interface ClassifierAnswer {
  classification: unknown;
}

/** Options of {@link describeClassifierConformance}. */
export type ClassifierConformanceOptions = ModelPortConformanceOptions<
  Classifier,
  ClassifierReceived,
  ClassifierAnswer
>;
/** What `create` gives {@link describeClassifierConformance}. */
export type ClassifierTestContext = ModelPortTestContext<Classifier, ClassifierReceived, ClassifierAnswer>;

const VALID: Classification = {
  main_label: "Tabby",
  main_score: 0.43,
  secondary_labels: [
    { label: "Tiger Cat", score: 0.375 },
    { label: "Egyptian Cat", score: 0.1 },
    { label: "Lynx", score: 0 },
    { label: "Persian Cat", score: 1 },
  ],
};
const four = (score: unknown = 0.1, label: unknown = "B") =>
  Array.from({ length: 4 }, () => ({ label, score }));

/** Answers that break the Classification schema, each a `MODEL_BAD_RESPONSE`. */
const INVALID: readonly [string, unknown][] = [
  ["three secondary labels", { ...VALID, secondary_labels: VALID.secondary_labels.slice(0, 3) }],
  [
    "five secondary labels",
    { ...VALID, secondary_labels: [...VALID.secondary_labels, { label: "X", score: 0 }] },
  ],
  ["a main score above 1", { ...VALID, main_score: 1.5 }],
  ["a negative secondary score", { ...VALID, secondary_labels: four(-0.1) }],
  ["a score as a string", { ...VALID, main_score: "0.5" }],
  ["an empty main label", { ...VALID, main_label: "" }],
  ["a blank secondary label", { ...VALID, secondary_labels: four(0.1, "   ") }],
  ["no main label", { main_score: 0.5, secondary_labels: four() }],
  ["an array", [VALID]],
  ["null", null],
];

/**
 * The behaviour every Classifier must show (see the port's TSDoc), against a stand-in provider the
 * adapter's test scripts: the image reaches the provider unchanged; a valid classification comes
 * back with exactly the {@link Classification} fields; every schema-invalid answer is
 * `MODEL_BAD_RESPONSE`; provider failures, timeouts and aborts as for every model port.
 */
export function describeClassifierConformance(options: ClassifierConformanceOptions): void {
  const withContext = contextRunner(options);
  const classify = async (port: Classifier, model: string) =>
    port.classify({ model, image: await conformanceModelImage() });
  describe(`Classifier conformance: ${options.name}`, () => {
    describeModelDeclarations(withContext, true);

    it(
      "sends the image unchanged and answers the validated classification, without extra fields",
      withContext(async ({ port, model, upstream }) => {
        upstream.answer(() => ({ classification: { ...VALID, extra: "dropped", debug: { tokens: 3 } } }));
        const image = await conformanceModelImage();
        expect(await port.classify({ model, image })).toStrictEqual(VALID);
        expect(upstream.calls()).toHaveLength(1);
        const { received } = upstream.calls()[0]!;
        expect(Buffer.from(received.image).equals(Buffer.from(image.data))).toBe(true);
        expect(received.mimeType).toBe("image/jpeg");
      }),
    );

    it(
      "answers each of several concurrent calls with the classification of its own image",
      withContext(async ({ port, model, upstream }) => {
        const colours = [Colors.red, Colors.green, Colors.blue, Colors.white] as const;
        const images = await Promise.all(colours.map((colour) => solidImage(8, 8, colour, "jpeg")));
        upstream.answer((received) => {
          const index = images.findIndex((data) => Buffer.from(data).equals(Buffer.from(received.image)));
          return { classification: { ...VALID, main_label: `image ${index}` } };
        });
        const results = await Promise.all(
          images.map((data) =>
            port.classify({ model, image: { data, mimeType: "image/jpeg", width: 8, height: 8 } }),
          ),
        );
        expect(results.map((result) => result.main_label)).toEqual([
          "image 0",
          "image 1",
          "image 2",
          "image 3",
        ]);
      }),
    );

    it.each(INVALID)(
      "answers MODEL_BAD_RESPONSE for a classification with %s",
      async (_why, classification) => {
        await withContext(async ({ port, model, upstream }) => {
          upstream.answer(() => ({ classification }));
          expect((await modelFailure(classify(port, model))).code).toBe(ErrorCodes.MODEL_BAD_RESPONSE);
        })();
      },
    );

    describeUpstreamFaults(withContext, async (port, model, callOptions) =>
      port.classify({ model, image: await conformanceModelImage() }, callOptions),
    );
  });
}
