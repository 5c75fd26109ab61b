import { validationError } from "../errors.js";
import { formatHasAlpha, type ImageFormat } from "../image.js";
import { BLACK, type Rgba, TRANSPARENT } from "../transforms/color.js";
import { blurSteps, planOutputSize, rotatedSize, type Size, stepOutputSize } from "../transforms/plan.js";
import type { TransformStep } from "../transforms/steps.js";
import type { Modifiers } from "./variant-url.js";

/*
 * A variant's parsed modifiers turned into codec steps, in a fixed order: crop, rotate, flip,
 * resize, blur.
 */

type Issues = { path: string; message: string }[];

/** The transform steps of a variant, in a fixed order: crop, rotate, flip, resize, blur. */
export function variantSteps(
  modifiers: Modifiers,
  source: Size,
  output: ImageFormat,
  maxOutputSide: number,
): TransformStep[] {
  const steps: TransformStep[] = [];
  const issues: Issues = [];
  let size = source;
  const background = modifiers.bg ?? (formatHasAlpha(output) ? TRANSPARENT : BLACK);
  const opaqueBackground = formatHasAlpha(output) ? background : { ...background, alpha: 1 };
  if (modifiers.crop !== undefined) {
    const { x1, y1, x2, y2 } = modifiers.crop;
    if (x2 > size.width || y2 > size.height) {
      issues.push({
        path: `crop_${x1}:${y1}:${x2}:${y2}`,
        message: `must lie inside the ${size.width} x ${size.height} image`,
      });
    } else {
      steps.push({ type: "crop", left: x1, top: y1, width: x2 - x1, height: y2 - y1 });
      size = { width: x2 - x1, height: y2 - y1 };
    }
  }
  if (modifiers.rot !== undefined && modifiers.rot % 360 !== 0) {
    const angle = ((modifiers.rot % 360) + 360) % 360;
    steps.push({ type: "rotate", angle, background: opaqueBackground });
    size = rotatedSize(size, angle);
  }
  if (modifiers.flip !== undefined) {
    const mode = modifiers.flip === "h" ? "horizontal" : modifiers.flip === "v" ? "vertical" : "both";
    steps.push({ type: "mirror", mode });
  }
  const resize = resizeStep(modifiers, size, opaqueBackground, issues);
  // A resize to the size the image already has changes nothing (every fit is the identity).
  if (resize !== undefined && (resize.width !== size.width || resize.height !== size.height)) {
    steps.push(resize);
    size = stepOutputSize(resize, size);
  }
  if (modifiers.blur !== undefined) {
    steps.push(...blurSteps(modifiers.blur, size));
  }
  if (issues.length > 0) throw validationError(issues);
  planOutputSize(steps, source, maxOutputSide, (step) =>
    step.type === "resize" ? (modifiers.w !== undefined ? `w_${modifiers.w}` : `h_${modifiers.h}`) : "rot",
  );
  return steps;
}

/** The resize `w_`/`h_` (times `dpr_`) ask of an image of `size`; none without either. */
function resizeStep(
  modifiers: Modifiers,
  size: Size,
  background: Rgba,
  issues: Issues,
): Extract<TransformStep, { type: "resize" }> | undefined {
  if (modifiers.w === undefined && modifiers.h === undefined) return undefined;
  const dpr = modifiers.dpr ?? 1;
  let width = modifiers.w === undefined ? undefined : Math.round(modifiers.w * dpr);
  let height = modifiers.h === undefined ? undefined : Math.round(modifiers.h * dpr);
  let fit = modifiers.fit ?? "cover";
  if (width !== undefined && height !== undefined && fit === "inside") {
    // The box bounds the output: without enlarge_1, the source's own size bounds it too.
    const factor = Math.min(width / size.width, height / size.height, modifiers.enlarge ? Infinity : 1);
    width = Math.max(1, Math.round(size.width * factor));
    height = Math.max(1, Math.round(size.height * factor));
    fit = "fill";
  } else if (modifiers.enlarge !== true) {
    // No upscaling unless asked: a box larger than the source shrinks, keeping its aspect
    // ratio, until it fits inside it (an upscaled variant has more bytes and no more detail).
    const shrink = Math.min(
      1,
      width === undefined ? 1 : size.width / width,
      height === undefined ? 1 : size.height / height,
    );
    if (width !== undefined) width = Math.max(1, Math.round(width * shrink));
    if (height !== undefined) height = Math.max(1, Math.round(height * shrink));
  }
  if (width === undefined || height === undefined) fit = "fill";
  width ??= Math.max(1, Math.round((size.width * height!) / size.height));
  height ??= Math.max(1, Math.round((size.height * width) / size.width));
  const position = modifiers.pos ?? "center";
  if ((position === "attention" || position === "entropy") && fit !== "cover") {
    issues.push({ path: `pos_${position}`, message: "needs fit_cover with both w_ and h_" });
  }
  return { type: "resize", width, height, fit: fit as "fill" | "contain" | "cover", position, background };
}
