import type { ImagePipeline, Logger } from "@pixport/core";

/**
 * What the container built for itself and therefore owns: the temp files its file stores may hold
 * after a crash, and the engines, counters and connections to close. Adapters registered by the
 * caller are the caller's to close. Resolve it with `resolve(container, Tokens.Lifecycle)`.
 */
export interface PixportLifecycle {
  /**
   * The engine of the embedded OCR the container built (what `ocrEngine: "auto"` chose); undefined
   * when extract-formatted-text goes to an LLM or to registered models.
   */
  readonly ocrEngine?: "wasm" | "native";
  /** Removes the temp files a crash left in the file stores the container built (once, at start). */
  sweepTemporaryFiles(): Promise<void>;
  /**
   * Closes what the container built, in order: the pipeline's background work (it finishes its
   * current image), then the engines (codec workers, OCR workers, the background remover), then the
   * last quota counts are written, then the connections (Redis, the S3 client). Idempotent.
   */
  close(): Promise<void>;
}

/** The list the wiring fills in while it builds; {@link PixportLifecycle} reads it. */
export interface OwnedResources {
  /** Temp-file sweeps of the file stores. */
  sweeps: (() => Promise<unknown>)[];
  /** Engines closed together once background work has stopped. */
  engines: (() => Promise<unknown>)[];
  /** Counters written before the connections close. */
  flushes: (() => Promise<unknown>)[];
  /** Connections closed last, in order. */
  connections: (() => Promise<unknown>)[];
  /** The pipeline, once resolved (its background work stops first). */
  pipeline?: ImagePipeline;
  ocrEngine?: "wasm" | "native";
}

export function createOwnedResources(): OwnedResources {
  return { sweeps: [], engines: [], flushes: [], connections: [] };
}

export function createLifecycle(owned: OwnedResources, logger: () => Logger): PixportLifecycle {
  let closing: Promise<void> | undefined;
  return {
    get ocrEngine() {
      return owned.ocrEngine;
    },
    async sweepTemporaryFiles() {
      await Promise.all(owned.sweeps.map((sweep) => sweep()));
    },
    close() {
      closing ??= (async () => {
        await owned.pipeline?.stopBackgroundWork();
        await Promise.all(owned.engines.map((close) => close()));
        // Uncapped usage counted in the last moments is written before the process goes.
        await Promise.all(
          owned.flushes.map((flush) =>
            flush().catch((error: unknown) =>
              logger().warn?.("could not write the last quota counts", { error: String(error) }),
            ),
          ),
        );
        for (const close of owned.connections) await close();
      })();
      return closing;
    },
  };
}
