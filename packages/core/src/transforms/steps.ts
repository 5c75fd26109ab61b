import type { AutoQualityTarget } from "../auto-quality.js";
import type { ImageFormat } from "../image.js";
import type { Rgba } from "./color.js";

/** Where `contain` places the image in the box, and which part `cover` keeps. */
export type Position =
  | "center"
  | "top"
  | "right"
  | "bottom"
  | "left"
  | "top-left"
  | "top-right"
  | "bottom-left"
  | "bottom-right"
  /** `cover` only: keep the region with the most detail (Shannon entropy). */
  | "entropy"
  /** `cover` only: keep the most salient region (skin tones, saturation, edges). */
  | "attention";

/** Flip: `horizontal` swaps left and right, `vertical` swaps top and bottom, `both` is a 180° turn. */
export interface MirrorStep {
  type: "mirror";
  mode: "horizontal" | "vertical" | "both";
}

/**
 * Resize. At least one of `width`/`height` is set (the core fills in the other from the aspect
 * ratio before the codec sees the step, so codecs always receive both).
 * - `fill`: exactly width x height, aspect ratio ignored.
 * - `contain`: fit inside, letterbox with `background`, placed by `position`.
 * - `cover`: cover the box, crop the overflow, keeping the part given by `position`.
 */
export interface ResizeStep {
  type: "resize";
  width: number;
  height: number;
  fit: "fill" | "contain" | "cover";
  position: Position;
  background: Rgba;
}

/** Extract the region `[left, left+width) x [top, top+height)`; the core checks it lies inside. */
export interface CropStep {
  type: "crop";
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Rotate clockwise by `angle` degrees; the canvas grows to the bounding box, corners get `background`. */
export interface RotateStep {
  type: "rotate";
  angle: number;
  background: Rgba;
}

/**
 * Colour adjustment, every field in API units (0 = no change), applied in this order:
 * `exposure` (linear gain on RGB, factor `1 + v/100`), then `brightness` (multiplies perceptual
 * lightness, factor `1 + v/100`), `saturation` (factor `1 + v/100`), `hue` (rotation in degrees),
 * `lightness` (adds `v` % of full scale to lightness), and last `contrast` (slope `1 + v/100` around
 * mid-grey).
 */
export interface ModulateStep {
  type: "modulate";
  brightness: number;
  saturation: number;
  exposure: number;
  contrast: number;
  lightness: number;
  hue: number;
}

/** Gaussian blur with standard deviation `sigma` in pixels. */
export interface BlurStep {
  type: "blur";
  sigma: number;
}

/** One overlay image drawn by an {@link OverlayStep}. */
export interface OverlayLayer {
  /** Encoded overlay bytes (jpeg, png or webp) already loaded by the core. */
  input: Uint8Array;
  /** Offset of the overlay's top-left corner, px; may be negative (the overlay is clipped). */
  left: number;
  top: number;
  /** Overlay size in px; the core fills both in (keeping the aspect ratio when one is missing). */
  width: number;
  height: number;
  /**
   * `no-repeat`: drawn once. `repeat`: tiled over the whole image in both directions, aligned so a
   * tile starts at left/top. `repeat-x` / `repeat-y`: tiled along one axis only.
   */
  repeat: "no-repeat" | "repeat" | "repeat-x" | "repeat-y";
  /** Overlay opacity 0..1 (1 for API watermarks; used by the test-key mark). */
  opacity: number;
}

/** Draws overlays on the image, in array order. */
export interface OverlayStep {
  type: "overlay";
  layers: OverlayLayer[];
}

/** Every transform a codec may be asked to run. Steps arrive validated and complete. */
export type TransformStep =
  | MirrorStep
  | ResizeStep
  | CropStep
  | RotateStep
  | ModulateStep
  | BlurStep
  | OverlayStep;

/** The name of a transform step (`"resize"`, `"crop"`, ...): what `capabilities.steps` lists. */
export type TransformStepType = TransformStep["type"];

/** Every step type, for a codec that runs them all (`capabilities.steps: TRANSFORM_STEP_TYPES`). */
export const TRANSFORM_STEP_TYPES: readonly TransformStepType[] = [
  "mirror",
  "resize",
  "crop",
  "rotate",
  "modulate",
  "blur",
  "overlay",
];

/** How to encode the result. */
export interface OutputOptions {
  format: ImageFormat;
  /** 1..100; used by jpeg and webp, ignored by png. */
  quality: number;
  /** Colour that transparency is flattened onto when `format` has no alpha (jpeg). */
  flattenBackground: Rgba;
  /**
   * Automatic quality, for a format of the codec's `capabilities.autoQuality`: encode at the lowest
   * quality found to keep this SSIM (searched from `quality`, see `searchQuality`), not at `quality`.
   * Absent: `quality` as given.
   */
  autoQuality?: AutoQualityTarget;
}
