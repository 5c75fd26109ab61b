import type { KeyKind } from "../image.js";

/**
 * Operations whose success counts toward usage, and how many processed images each counts
 * (contract section 3 and P8: every 201 counts one, remove-background two).
 */
export const BILLING_UNITS: Readonly<Record<string, number>> = {
  uploadImage: 1,
  createImageFromUrl: 1,
  imagineImage: 1,
  publishImage: 1,
  unpublishImage: 1,
  mirrorImage: 1,
  convertImage: 1,
  resizeImage: 1,
  cropImage: 1,
  rotateImage: 1,
  modulateImage: 1,
  blurImage: 1,
  removeImageBackground: 2,
  watermarkImage: 1,
  visualizeImage: 1,
  classifyImage: 1,
  extractFormattedText: 1,
};

/**
 * Processed images billed for one successful call: the operation's units for live keys, 0 for test
 * keys (test keys never count toward the quota) and for operations that do not bill (get, list,
 * delete, download).
 */
export function billedUnits(operationId: string, keyKind: KeyKind): number {
  if (keyKind === "test") return 0;
  return BILLING_UNITS[operationId] ?? 0;
}
