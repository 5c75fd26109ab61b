/** Input of {@link BackgroundRemover.remove}. */
export interface BackgroundRemovalRequest {
  /** Encoded image bytes (jpeg, png or webp), already validated by the core. Never a path or URL. */
  image: Uint8Array;
  /** Dimensions of `image` (after EXIF orientation) as recorded by the core. */
  width: number;
  height: number;
}

/** Per-call options of {@link BackgroundRemover.remove}. */
export interface BackgroundRemovalOptions {
  /** Aborts the work when possible (client gone, server shutting down). */
  signal?: AbortSignal;
}

/**
 * Removes the background of an image (`POST /v1/images/{id}/remove-background`).
 *
 * Semantics: `remove` resolves an RGBA PNG of exactly `width` x `height` px whose alpha is 0 where
 * the background was and 255 on the subject (edges may be partially transparent). It never hangs:
 * an embedded remover bounds its own work, a model-backed one runs under a timeout and rejects with
 * a pixport error (`MODEL_TIMEOUT`, `MODEL_BAD_RESPONSE`, ...). The core checks that the result is a
 * PNG of that size and stores it as it is (re-encoded only to stamp the test mark for test keys):
 * one encode per cut-out, so the PNG must carry no metadata (sharp writes none unless asked).
 */
export interface BackgroundRemover {
  /** Short name for logs (e.g. `sharp-classical`). */
  readonly name: string;
  remove(request: BackgroundRemovalRequest, options?: BackgroundRemovalOptions): Promise<Uint8Array>;
}
