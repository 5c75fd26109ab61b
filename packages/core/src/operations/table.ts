/**
 * The one table of pixport's operations: the pipeline method of each id, how many processed images
 * a successful call bills (contract section 3 and P8: every 201 counts one, remove-background
 * two; reads and deletes none), and whether it runs as an image job in the node's work gate
 * (creates, transforms and remove-background: pixel work on this node). Billing, the work gate,
 * the pipeline's type (every id must be a method) and the HTTP route table's operation ids (typed
 * `OperationId`) all read it, so adding an operation is one entry here plus its route, and a typo
 * anywhere is a type error.
 */
export const OPERATIONS_TABLE = {
  uploadImage: { billing: 1, gated: true },
  createImageFromUrl: { billing: 1, gated: true },
  getImage: { billing: 0, gated: false },
  /** Size, format, frames, alpha, dominant colour and placeholder hashes, stored at creation. */
  getImageMetadata: { billing: 0, gated: false },
  /** Variant delivery: no key, not billed; a cache miss takes a work-gate slot inside. */
  deliverVariant: { billing: 0, gated: false },
  createSignedUrl: { billing: 0, gated: false },
  listImages: { billing: 0, gated: false },
  deleteImage: { billing: 0, gated: false },
  downloadImage: { billing: 0, gated: false },
  publishImage: { billing: 1, gated: false },
  unpublishImage: { billing: 1, gated: false },
  mirrorImage: { billing: 1, gated: true },
  convertImage: { billing: 1, gated: true },
  resizeImage: { billing: 1, gated: true },
  cropImage: { billing: 1, gated: true },
  rotateImage: { billing: 1, gated: true },
  modulateImage: { billing: 1, gated: true },
  blurImage: { billing: 1, gated: true },
  watermarkImage: { billing: 1, gated: true },
  /** Up to 10 steps in one decode/encode: one stored image, billed once. */
  transformImage: { billing: 1, gated: true },
  removeImageBackground: { billing: 2, gated: true },
  imagineImage: { billing: 1, gated: false },
  visualizeImage: { billing: 1, gated: false },
  classifyImage: { billing: 1, gated: false },
  extractFormattedText: { billing: 1, gated: false },
} as const satisfies Record<string, { billing: number; gated: boolean }>;

/** The id of an operation (its pipeline method and its OpenAPI operation id). */
export type OperationId = keyof typeof OPERATIONS_TABLE;

/** Whether `value` is an operation id. */
export function isOperationId(value: string): value is OperationId {
  return Object.hasOwn(OPERATIONS_TABLE, value);
}
