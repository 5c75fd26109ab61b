import type { ModulateStep, Position, Rgba, Size, TransformStep } from "@pixport/core/adapter-kit";
import { rotatedSize, stepOutputSize } from "@pixport/core/adapter-kit";
import type { Sharp, SharpOptions } from "sharp";
import sharp from "sharp";
import { compositeEntries } from "./overlay.js";

/** sharp operations added to one pipeline. */
export type Operations = (image: Sharp) => Sharp;

/**
 * One sharp pipeline's worth of work. sharp runs the operations of a pipeline in its own fixed
 * order, not in call order, so each step gets its own pass; passes are chained through raw pixel
 * buffers, and the first pass reads the encoded input (keeping JPEG shrink-on-load for a leading
 * resize) and the last one encodes when that is safe.
 */
export interface Pass {
  /** The operations for an image of `size` (the actual current size), or `null` when there is nothing to do. */
  plan(size: Size): Operations | null | Promise<Operations | null>;
  /** The result must be read back as pixels before the next pass (the next pass needs its exact size). */
  materialise: boolean;
  /** An opaque input stays opaque (so flattening before the pass equals flattening after it). */
  keepsOpaque: boolean;
}

const GRAVITY: Readonly<Record<Position, string | number>> = {
  entropy: sharp.strategy.entropy,
  attention: sharp.strategy.attention,
  center: "centre",
  top: "north",
  right: "east",
  bottom: "south",
  left: "west",
  "top-left": "northwest",
  "top-right": "northeast",
  "bottom-left": "southwest",
  "bottom-right": "southeast",
};

/** sharp's colour object; alpha is 0..1 like ours. */
export function sharpColor(color: Rgba): { r: number; g: number; b: number; alpha: number } {
  const channel = (value: number) => Math.min(255, Math.max(0, Math.round(value)));
  return {
    r: channel(color.r),
    g: channel(color.g),
    b: channel(color.b),
    alpha: Math.min(1, Math.max(0, color.alpha)),
  };
}

const constant =
  (operations: Operations): Pass["plan"] =>
  () =>
    operations;

/**
 * Compiles validated steps into passes. `input` is the oriented input size; sizes are tracked with
 * the core's own `stepOutputSize`, which every pass reproduces exactly.
 */
export function compilePasses(
  steps: readonly TransformStep[],
  input: Size,
  decodeOptions: SharpOptions,
): Pass[] {
  const passes: Pass[] = [];
  let size = input;
  for (const step of steps) {
    passes.push(...passesFor(step, size, decodeOptions));
    size = stepOutputSize(step, size);
  }
  return passes;
}

function passesFor(step: TransformStep, size: Size, decodeOptions: SharpOptions): Pass[] {
  switch (step.type) {
    case "mirror": {
      const flip = step.mode === "vertical" || step.mode === "both";
      const flop = step.mode === "horizontal" || step.mode === "both";
      return [
        {
          plan: constant((image) => image.flip(flip).flop(flop)),
          materialise: false,
          keepsOpaque: true,
        },
      ];
    }
    case "resize":
      return [
        {
          plan: constant((image) =>
            image.resize({
              width: step.width,
              height: step.height,
              fit: step.fit,
              position: GRAVITY[step.position] ?? "centre",
              background: sharpColor(step.background),
            }),
          ),
          materialise: false,
          keepsOpaque: step.fit !== "contain" || step.background.alpha >= 1,
        },
      ];
    case "crop":
      return [
        {
          plan: constant((image) =>
            image.extract({ left: step.left, top: step.top, width: step.width, height: step.height }),
          ),
          materialise: false,
          keepsOpaque: true,
        },
      ];
    case "rotate":
      return rotatePasses(step.angle, step.background, size);
    case "modulate":
      return [{ plan: modulatePlan(step), materialise: false, keepsOpaque: true }];
    case "blur": {
      const sigma = Math.min(1000, Math.max(0.3, step.sigma));
      return [{ plan: constant((image) => image.blur(sigma)), materialise: false, keepsOpaque: true }];
    }
    case "overlay":
      return [
        {
          plan: async (current) => {
            const entries = await compositeEntries(step.layers, current, decodeOptions);
            return entries.length === 0 ? null : (image) => image.composite(entries);
          },
          materialise: false,
          // Drawing over an opaque base keeps it opaque.
          keepsOpaque: true,
        },
      ];
    default: {
      const unknown: never = step;
      throw new Error(`Unknown transform step ${(unknown as { type: string }).type}`);
    }
  }
}

function rotatePasses(angle: number, background: Rgba, size: Size): Pass[] {
  const normalised = ((angle % 360) + 360) % 360;
  if (normalised % 90 === 0) {
    return [
      {
        plan: () => (normalised === 0 ? null : (image) => image.rotate(normalised)),
        materialise: false,
        keepsOpaque: true,
      },
    ];
  }
  const color = sharpColor(background);
  const target = rotatedSize(size, normalised);
  return [
    {
      plan: constant((image) => image.rotate(normalised, { background: color })),
      materialise: true,
      keepsOpaque: color.alpha >= 1,
    },
    {
      // libvips sizes the rotated canvas with its own rounding, which can differ from the core's
      // bounding box by a pixel; trim or pad (centred) so the output is exactly `rotatedSize`.
      plan: (actual) => {
        if (actual.width === target.width && actual.height === target.height) return null;
        return (image) => {
          let result = image;
          if (actual.width > target.width || actual.height > target.height) {
            const width = Math.min(actual.width, target.width);
            const height = Math.min(actual.height, target.height);
            result = result.extract({
              left: Math.floor((actual.width - width) / 2),
              top: Math.floor((actual.height - height) / 2),
              width,
              height,
            });
          }
          const padX = Math.max(0, target.width - actual.width);
          const padY = Math.max(0, target.height - actual.height);
          if (padX > 0 || padY > 0) {
            result = result.extend({
              left: Math.floor(padX / 2),
              right: padX - Math.floor(padX / 2),
              top: Math.floor(padY / 2),
              bottom: padY - Math.floor(padY / 2),
              background: color,
            });
          }
          return result;
        };
      },
      materialise: false,
      keepsOpaque: color.alpha >= 1,
    },
  ];
}

/**
 * ModulateStep semantics in one pipeline, using sharp's fixed order recomb → modulate → linear:
 * exposure is a gain on RGB (a diagonal recomb matrix), brightness/saturation/hue/lightness are
 * sharp's LCh modulate, and contrast is a slope around mid-grey. Alpha is left untouched by all
 * three; factors are clamped at 0.
 */
function modulatePlan(step: ModulateStep): Pass["plan"] {
  const exposure = Math.max(0, 1 + step.exposure / 100);
  const brightness = Math.max(0, 1 + step.brightness / 100);
  const saturation = Math.max(0, 1 + step.saturation / 100);
  const hue = Math.round(step.hue);
  const lightness = step.lightness;
  const contrast = Math.max(0, 1 + step.contrast / 100);
  const modulates = brightness !== 1 || saturation !== 1 || hue % 360 !== 0 || lightness !== 0;
  if (exposure === 1 && !modulates && contrast === 1) return () => null;
  return () => (image) => {
    let result = image;
    if (exposure !== 1) {
      result = result.recomb([
        [exposure, 0, 0],
        [0, exposure, 0],
        [0, 0, exposure],
      ]);
    }
    if (modulates) result = result.modulate({ brightness, saturation, hue, lightness });
    if (contrast !== 1) result = result.linear(contrast, 128 * (1 - contrast));
    return result;
  };
}
