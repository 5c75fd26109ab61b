import { describe } from "vitest";
import { describeBlur, describeModulate } from "./image-codec-colour.js";
import { describeBombs, describeErrors, describeProbe, describeSourceKey } from "./image-codec-decode.js";
import { describeEncode } from "./image-codec-encode.js";
import { describeImageCodecFormats } from "./image-codec-formats.js";
import {
  describeCrop,
  describeMirror,
  describeResize,
  describeRotate,
  describeStepsInOrder,
} from "./image-codec-geometry.js";
import { createCodecHarness, type ImageCodecConformanceOptions } from "./image-codec-harness.js";
import { describeOverlay } from "./image-codec-overlay.js";

export type { ImageCodecConformanceOptions, ImageCodecSuiteGroup } from "./image-codec-harness.js";

/**
 * The ImageCodec conformance suite: behavioural, pixel-level checks of the port's semantics on tiny
 * generated images (see `fixtures/images.ts`). Results are decoded and measured (colours at known
 * positions, dimensions, magic bytes, statistics); encoded bytes are never compared.
 *
 * Its groups live one per file: decode and safety (`image-codec-decode.ts`: probe, source keys,
 * errors, decompression bombs), encoding (`image-codec-encode.ts`), geometry
 * (`image-codec-geometry.ts`), colour (`image-codec-colour.ts`), overlay
 * (`image-codec-overlay.ts`), formats (`image-codec-formats.ts`) and animation
 * (`image-codec-animation.ts`).
 *
 * @example
 * ```ts
 * describeImageCodecConformance({ name: "sharp", create: () => createSharpCodec() });
 * ```
 */
export function describeImageCodecConformance(options: ImageCodecConformanceOptions): void {
  describe(`ImageCodec conformance: ${options.name}`, () => {
    const harness = createCodecHarness(options);
    describeProbe(harness);
    describeEncode(harness);
    describeMirror(harness);
    describeCrop(harness);
    describeRotate(harness);
    describeResize(harness);
    describeBlur(harness);
    describeModulate(harness);
    describeOverlay(harness);
    describeStepsInOrder(harness);
    describeSourceKey(harness);
    describeErrors(harness);
    describeBombs(harness);
    describeImageCodecFormats(options.name, () => harness.codec);
    options.extraTests?.(() => harness.codec);
  });
}
