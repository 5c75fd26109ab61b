import type { Region } from "./native.js";

/**
 * The smallest region holding every pixel of a greyscale page darker than `threshold` (the ink),
 * grown by `margin` px on each side and clipped to the page; `undefined` for a page without ink.
 *
 * The extractor's page pass reads only this region: tesseract's layout analysis (binarisation,
 * connected components, block finding) costs in proportion to the pixels it is given, and the
 * rendered documents of the OCR suite are about half margin (BENCHMARKS.md, "OCR"). Each row is
 * scanned only outside the bounds found so far, so a page costs about one pass over its margins.
 */
export function inkBounds(
  grey: Uint8Array,
  width: number,
  height: number,
  margin: number,
  threshold = 128,
): Region | undefined {
  const inked = (row: number) => {
    const start = row * width;
    for (let index = start; index < start + width; index++) if (grey[index]! < threshold) return true;
    return false;
  };
  let top = 0;
  while (top < height && !inked(top)) top++;
  if (top === height) return undefined;
  let bottom = height - 1;
  while (!inked(bottom)) bottom--;
  let left = width;
  let right = -1;
  for (let row = top; row <= bottom; row++) {
    const start = row * width;
    for (let x = 0; x < left; x++) {
      if (grey[start + x]! < threshold) {
        left = x;
        break;
      }
    }
    for (let x = width - 1; x > right; x--) {
      if (grey[start + x]! < threshold) {
        right = x;
        break;
      }
    }
  }
  const x0 = Math.max(0, left - margin);
  const y0 = Math.max(0, top - margin);
  const x1 = Math.min(width - 1, right + margin);
  const y1 = Math.min(height - 1, bottom + margin);
  return { left: x0, top: y0, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}
