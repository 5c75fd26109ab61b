/** Pre- and post-processing of one family of segmentation models. */
export interface OnnxModelPreset {
  /** Model input size (px) when the model's own input shape is dynamic. */
  inputWidth: number;
  inputHeight: number;
  /** Per-channel (R, G, B) mean and standard deviation on the 0..1 scale: `(v / 255 - mean) / std`. */
  mean: readonly [number, number, number];
  std: readonly [number, number, number];
  /**
   * What the output map holds: `probability` (0..1, already through a sigmoid) or `logits`
   * (a sigmoid is applied).
   */
  output: "probability" | "logits";
  /**
   * `minmax` stretches the map to 0..1 per image (what the U2-Net reference code does); `none`
   * clamps it to 0..1.
   */
  normalize: "minmax" | "none";
}

const IMAGENET_MEAN = [0.485, 0.456, 0.406] as const;
const IMAGENET_STD = [0.229, 0.224, 0.225] as const;

/**
 * The model families pixport knows, with the pre- and post-processing their reference code uses.
 * Every field can be overridden in the options for a model trained differently.
 *
 * - `u2net` (U²-Net, U²-NetP, and the rembg `u2net_human_seg`/`silueta` exports): 320 x 320,
 *   ImageNet normalisation, sigmoid probabilities stretched per image.
 * - `isnet` (IS-Net / DIS, e.g. rembg `isnet-general-use`, IMG.LY's exports): 1024 x 1024,
 *   `(v - 0.5) / 1`, sigmoid probabilities.
 * - `birefnet` (BiRefNet and its lite exports): 1024 x 1024, ImageNet normalisation, logits.
 */
export const MODEL_PRESETS = {
  u2net: {
    inputWidth: 320,
    inputHeight: 320,
    mean: IMAGENET_MEAN,
    std: IMAGENET_STD,
    output: "probability",
    normalize: "minmax",
  },
  isnet: {
    inputWidth: 1024,
    inputHeight: 1024,
    mean: [0.5, 0.5, 0.5],
    std: [1, 1, 1],
    output: "probability",
    normalize: "none",
  },
  birefnet: {
    inputWidth: 1024,
    inputHeight: 1024,
    mean: IMAGENET_MEAN,
    std: IMAGENET_STD,
    output: "logits",
    normalize: "none",
  },
} as const satisfies Record<string, OnnxModelPreset>;

export type OnnxModelFamily = keyof typeof MODEL_PRESETS;
