import type { Size } from "../transforms/plan.js";
import type { OverlayLayer } from "../transforms/steps.js";
import { DEFAULT_TEST_MARK_PNG_BASE64, DEFAULT_TEST_MARK_SIZE } from "./test-mark.js";

/** The mark stamped on every image produced with a test key. */
export interface TestWatermark {
  /** Encoded mark (png with alpha, jpeg or webp). */
  image: Uint8Array;
  /** Its size in px. */
  width: number;
  height: number;
  /** Opacity 0..1 of the mark. */
  opacity: number;
}

function decodeBase64(text: string): Uint8Array {
  const binary = globalThis.atob(text);
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}

/** The default mark: "TEST" tiled diagonally, white with a black outline, at 50 % opacity. */
export const DEFAULT_TEST_WATERMARK: TestWatermark = {
  image: decodeBase64(DEFAULT_TEST_MARK_PNG_BASE64),
  ...DEFAULT_TEST_MARK_SIZE,
  opacity: 0.5,
};

/**
 * The overlay layer that marks an image of `size` produced with a test key: the mark tiled over the
 * whole image, scaled so a tile is about 40 % of the image's shorter side (at least 24 px, at most
 * the mark's own size), so every output, however small or large, shows it several times or at
 * least partly.
 */
export function testWatermarkLayer(size: Size, mark: TestWatermark = DEFAULT_TEST_WATERMARK): OverlayLayer {
  const target = Math.round(Math.min(size.width, size.height) * 0.4);
  const width = Math.max(24, Math.min(mark.width, target));
  const height = Math.max(1, Math.round((mark.height * width) / mark.width));
  return { input: mark.image, left: 0, top: 0, width, height, repeat: "repeat", opacity: mark.opacity };
}
