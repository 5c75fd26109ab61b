import { ErrorCodes, type ValidationIssue, validationError } from "../errors.js";
import type { TransformStep } from "./steps.js";

/** Width and height in px. */
export interface Size {
  width: number;
  height: number;
}

/** Output size of a rotation by `angle` degrees: the bounding box of the turned rectangle. */
export function rotatedSize(size: Size, angle: number): Size {
  const normalised = ((angle % 360) + 360) % 360;
  if (normalised % 90 === 0) {
    return normalised % 180 === 0 ? { ...size } : { width: size.height, height: size.width };
  }
  const radians = (normalised * Math.PI) / 180;
  const cos = Math.abs(Math.cos(radians));
  const sin = Math.abs(Math.sin(radians));
  return {
    width: Math.ceil(size.width * cos + size.height * sin - 1e-9),
    height: Math.ceil(size.width * sin + size.height * cos - 1e-9),
  };
}

/** The size a step produces from an input of `size` (what codecs must also produce). */
export function stepOutputSize(step: TransformStep, size: Size): Size {
  switch (step.type) {
    case "resize":
      return { width: step.width, height: step.height };
    case "crop":
      return { width: step.width, height: step.height };
    case "rotate":
      return rotatedSize(size, step.angle);
    default:
      return size;
  }
}

/**
 * Checks that no step produces an image larger than `maxSide` on either side and returns the final
 * size. `fieldFor` names the request field that caused an oversized step.
 */
export function planOutputSize(
  steps: readonly TransformStep[],
  input: Size,
  maxSide: number,
  fieldFor: (step: TransformStep) => string,
): Size {
  let size = input;
  const issues: ValidationIssue[] = [];
  for (const step of steps) {
    size = stepOutputSize(step, size);
    if (size.width > maxSide || size.height > maxSide) {
      issues.push({
        path: fieldFor(step),
        message: `must result in an image of at most ${maxSide} x ${maxSide} pixels (would be ${size.width} x ${size.height})`,
      });
      break;
    }
  }
  if (issues.length > 0) throw validationError(issues, ErrorCodes.OUTPUT_TOO_LARGE);
  return size;
}
