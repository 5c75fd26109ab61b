/**
 * An image handed to a model: the core's own encode (never the bytes a client sent, nor their
 * metadata), so adapters only wrap the bytes (e.g. as a data URL). A JPEG downscaled to the
 * provider's `maxImageSide` (no alpha), or, for a provider that declares `lossless`, a PNG of the
 * original's full-size pixels (EXIF-oriented; transparency kept for the adapter to handle): a
 * stored PNG as the core stored it at upload, any other format re-encoded.
 */
export interface ModelImage {
  data: Uint8Array;
  mimeType: "image/jpeg" | "image/png";
  width: number;
  height: number;
}

/** Per-call options of every model port. */
export interface ModelCallOptions {
  /**
   * Aborts the upstream call (client gone, server shutting down): a call whose signal is already
   * aborted rejects without calling the provider; an abort during the call gives the upstream
   * request up and rejects at once (with a pixport error other than `MODEL_TIMEOUT`).
   */
  signal?: AbortSignal;
  /**
   * Reserves `bytes` of the node's memory budget for memory the provider itself takes in this
   * process tree (an embedded engine's page buffers and recogniser), waiting for room as the
   * codec's jobs do. Resolves the release function (call it when that memory is free; a second
   * call does nothing); rejects with 422 `IMAGE_TOO_LARGE` on the `image` field when `bytes`
   * could never fit, with `OVERLOADED` (503) after the budget's longest wait, or with the call's
   * abort reason. Absent when the node has no budget; providers that read nothing locally (a
   * remote model) ignore it. Given to text extractors (`extract-formatted-text`).
   */
  reserveMemory?: (bytes: number) => Promise<() => void>;
}

/**
 * What every model port declares about itself. `models` are the API's model names the
 * deployment serves (e.g. `llava`), not upstream ids.
 */
export interface ModelProvider {
  /** API model names this provider is configured for (non-empty, each once). */
  readonly models: readonly string[];
  /**
   * The model used when the request names none, one of `models`; `undefined` means the
   * contract's default.
   */
  readonly defaultModel?: string | undefined;
  /**
   * Longest side in px of images `model` accepts (image ports only); the core downscales to it.
   * `undefined` means `DEFAULT_MODEL_IMAGE_SIDE` (1024).
   */
  maxImageSide?(model: string): number | undefined;
  /**
   * The provider reads pixels itself (an embedded OCR engine): the core hands it a lossless PNG of
   * the original at full size instead of a downscaled JPEG (a stored PNG as it is stored, without
   * a second encode), and `maxImageSide` is not applied. The
   * input pixel limits still bound what it receives. @default false
   */
  readonly lossless?: boolean;
}

/**
 * Visual question answering (`POST /v1/images/{id}/visualize`): an image and a prompt in, text out.
 *
 * Semantics: `describe` sends the image bytes as given (wrapped, never re-encoded) with the
 * prompt, and resolves the model's answer text (trimmed, non-empty) or rejects with a pixport
 * error: `MODEL_TIMEOUT` when the per-call timeout passes (the upstream call is given up, also
 * when the answer started and stalled), `MODEL_UNAVAILABLE` when the provider refuses (rate limit,
 * quota, our key) with `retryAfterSeconds` (the provider's hint when it gives one, else the
 * adapter's default), `VALIDATION_FAILED` with an issue on `model` when the provider rejects the
 * input itself (a 400), `MODEL_BAD_RESPONSE` on 5xx, connection errors and malformed, empty or
 * truncated answers. It never retries beyond its own budget and never hangs past its timeout;
 * concurrent calls each get their own answer. Aborts: see {@link ModelCallOptions.signal}.
 */
export interface VisionModel extends ModelProvider {
  describe(
    request: { model: string; image: ModelImage; prompt: string },
    options?: ModelCallOptions,
  ): Promise<string>;
}
