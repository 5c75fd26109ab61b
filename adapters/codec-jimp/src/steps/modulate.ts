import type { ModulateStep } from "@pixport/core/adapter-kit";
import type { Bitmap } from "../bitmap.js";

/** sRGB transfer function, 0..1 → linear 0..1. */
function toLinear(value: number): number {
  return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
}

/** Inverse sRGB transfer function, linear 0..1 → 0..1. */
function fromLinear(value: number): number {
  return value <= 0.0031308 ? value * 12.92 : 1.055 * value ** (1 / 2.4) - 0.055;
}

// libvips' D65 white (Lab of sharp's modulate).
const WHITE_X = 0.95047;
const WHITE_Z = 1.08883;
const EPSILON = 216 / 24389;
const KAPPA = 24389 / 27;
/** Entries of the linear → output table (16 bits: well below one 8-bit step anywhere on the curve). */
const OUT_STEPS = 65535;

/**
 * ModulateStep semantics in one pass over the pixels, in sharp's order: exposure (gain on the sRGB
 * values), then brightness, saturation, hue and lightness in CIE LCh (what sharp's `modulate` uses:
 * L x brightness + lightness, C x saturation, h + hue), then contrast (slope around 128). Alpha is
 * untouched. Per-channel work is table driven: one 256-entry table folds exposure into the sRGB →
 * linear step, and one 65,536-entry table folds linear → sRGB, clipping and contrast, so the inner
 * loop only does the two 3x3 matrices, three cube roots and the LCh arithmetic.
 */
export function modulate(bitmap: Bitmap, step: ModulateStep): Bitmap {
  const parameters = modulateParameters(step);
  const { exposure, contrast, inLch } = parameters;
  if (exposure === 1 && !inLch && contrast === 1) return bitmap;
  return inLch ? modulateInLch(bitmap, parameters) : exposeAndContrast(bitmap, parameters);
}

/** The step as gains and offsets, and whether it needs the LCh pass. */
interface ModulateParameters {
  readonly exposure: number;
  readonly brightness: number;
  readonly saturation: number;
  /** Degrees, whole, -359..359. */
  readonly hue: number;
  readonly lightness: number;
  readonly contrast: number;
  readonly inLch: boolean;
}

function modulateParameters(step: ModulateStep): ModulateParameters {
  const brightness = Math.max(0, 1 + step.brightness / 100);
  const saturation = Math.max(0, 1 + step.saturation / 100);
  const hue = Math.round(step.hue) % 360;
  const lightness = step.lightness;
  return {
    exposure: Math.max(0, 1 + step.exposure / 100),
    brightness,
    saturation,
    hue,
    lightness,
    contrast: Math.max(0, 1 + step.contrast / 100),
    inLch: brightness !== 1 || saturation !== 1 || hue !== 0 || lightness !== 0,
  };
}

/** The contrast slope around 128, clipped and rounded to a byte. */
function contrastCurve(contrast: number): (value: number) => number {
  return (value: number) => {
    const result = value * contrast + 128 * (1 - contrast);
    return result <= 0 ? 0 : result >= 255 ? 255 : Math.round(result);
  };
}

/**
 * Exposure and contrast only: one table per byte value. sharp runs both in float without an
 * intermediate 8-bit step, so the table does too.
 */
function exposeAndContrast(bitmap: Bitmap, { exposure, contrast }: ModulateParameters): Bitmap {
  const contrasted = contrastCurve(contrast);
  const data = Buffer.from(bitmap.data);
  const table = new Uint8Array(256);
  for (let value = 0; value < 256; value += 1) table[value] = contrasted(value * exposure);
  for (let offset = 0; offset < data.length; offset += 4) {
    data[offset] = table[data[offset]!]!;
    data[offset + 1] = table[data[offset + 1]!]!;
    data[offset + 2] = table[data[offset + 2]!]!;
  }
  return { ...bitmap, data };
}

/** Lab's forward companding. */
const f = (t: number) => (t > EPSILON ? Math.cbrt(t) : (KAPPA * t + 16) / 116);

/** Lab's inverse companding. */
const finverse = (t: number) => {
  const cube = t * t * t;
  return cube > EPSILON ? cube : (116 * t - 16) / KAPPA;
};

/** The output byte of a linear value through the linear → output table. */
const encode = (output: Uint8Array, value: number) =>
  output[value <= 0 ? 0 : value >= 1 ? OUT_STEPS : (value * OUT_STEPS + 0.5) | 0]!;

/** The 256-entry sRGB → linear table with exposure folded in. */
function linearTable(exposure: number): Float64Array {
  const linear = new Float64Array(256);
  for (let value = 0; value < 256; value += 1)
    linear[value] = toLinear(Math.min(1, (value * exposure) / 255));
  return linear;
}

/** The linear → sRGB table with clipping and contrast folded in. */
function outputTable(contrast: number): Uint8Array {
  const contrasted = contrastCurve(contrast);
  const output = new Uint8Array(OUT_STEPS + 1);
  for (let index = 0; index <= OUT_STEPS; index += 1) {
    output[index] = contrasted(fromLinear(index / OUT_STEPS) * 255);
  }
  return output;
}

/** Exposure, then brightness, saturation, hue and lightness in LCh, then contrast. */
function modulateInLch(bitmap: Bitmap, parameters: ModulateParameters): Bitmap {
  const { brightness, saturation, hue, lightness } = parameters;
  const data = Buffer.from(bitmap.data);
  const linear = linearTable(parameters.exposure);
  const output = outputTable(parameters.contrast);
  const radians = (hue * Math.PI) / 180;
  const rotateCos = Math.cos(radians) * saturation;
  const rotateSin = Math.sin(radians) * saturation;
  let lastR = -1;
  let lastG = -1;
  let lastB = -1;
  let outR = 0;
  let outG = 0;
  let outB = 0;
  for (let offset = 0; offset < data.length; offset += 4) {
    const r8 = data[offset]!;
    const g8 = data[offset + 1]!;
    const b8 = data[offset + 2]!;
    // Flat areas repeat colours: reuse the previous result.
    if (r8 !== lastR || g8 !== lastG || b8 !== lastB) {
      lastR = r8;
      lastG = g8;
      lastB = b8;
      const r = linear[r8]!;
      const g = linear[g8]!;
      const b = linear[b8]!;
      // Linear sRGB → XYZ (D65), then Lab.
      const fx = f((0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / WHITE_X);
      const fy = f(0.2126729 * r + 0.7151522 * g + 0.072175 * b);
      const fz = f((0.0193339 * r + 0.119192 * g + 0.9503041 * b) / WHITE_Z);
      let lightnessValue = 116 * fy - 16;
      const a = 500 * (fx - fy);
      const bb = 200 * (fy - fz);
      // LCh: L x brightness + lightness; (a, b) rotated by hue and scaled by saturation.
      lightnessValue = lightnessValue * brightness + lightness;
      const a2 = a * rotateCos - bb * rotateSin;
      const b2 = a * rotateSin + bb * rotateCos;
      // Lab → XYZ → linear sRGB.
      const fy2 = (lightnessValue + 16) / 116;
      const x = WHITE_X * finverse(fy2 + a2 / 500);
      const y = lightnessValue > KAPPA * EPSILON ? fy2 * fy2 * fy2 : lightnessValue / KAPPA;
      const z = WHITE_Z * finverse(fy2 - b2 / 200);
      outR = encode(output, 3.2404542 * x - 1.5371385 * y - 0.4985314 * z);
      outG = encode(output, -0.969266 * x + 1.8760108 * y + 0.041556 * z);
      outB = encode(output, 0.0556434 * x - 0.2040259 * y + 1.0572252 * z);
    }
    data[offset] = outR;
    data[offset + 1] = outG;
    data[offset + 2] = outB;
  }
  return { ...bitmap, data };
}
