import type { ImagePipeline, Logger } from "@pixport/core";

/**
 * Runs the retention sweep (expired test images) and the orphan sweep (what interrupted writes
 * left behind: bytes without a record, copies without a publish) now and every `intervalMs`
 * (0: only now). Failures are logged, never thrown. Returns the function that stops the timer.
 */
export function scheduleSweeps(pipeline: ImagePipeline, log: Logger, intervalMs: number): () => void {
  const sweep = () =>
    Promise.all([
      pipeline.sweepExpiredTestImages().then(
        (removed) => {
          if (removed > 0) log.info?.("retention sweep removed expired test images", { removed });
        },
        (error: unknown) => log.warn?.("retention sweep failed", { error: String(error) }),
      ),
      pipeline.sweepOrphans().then(
        (removed) => {
          if (removed.privateBlobs + removed.publicCopies > 0) log.info?.("orphan sweep", { ...removed });
        },
        (error: unknown) => log.warn?.("orphan sweep failed", { error: String(error) }),
      ),
    ]);
  void sweep();
  const timer = intervalMs > 0 ? setInterval(sweep, intervalMs) : undefined;
  timer?.unref();
  return () => clearInterval(timer);
}
