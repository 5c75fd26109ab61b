import type { PipelineContext } from "./context.js";
import { removeImage } from "./manage-images.js";

/** Input of {@link sweepExpiredTestImages}. */
export interface SweepExpiredInput {
  /** Test-stage images created before this instant are removed. */
  createdBefore: Date;
  /** Records handled per repository call. @default 100 */
  batchSize?: number;
}

/**
 * Retention: removes every test-stage image created before `createdBefore` (record, bytes and
 * public copy), in batches, oldest first. Idempotent and safe to run on several nodes at once (a
 * record another node removed first is skipped). Returns how many images this call removed.
 */
export async function sweepExpiredTestImages(
  context: PipelineContext,
  input: SweepExpiredInput,
): Promise<number> {
  const batchSize = input.batchSize ?? 100;
  const createdBefore = input.createdBefore.toISOString();
  let removed = 0;
  for (;;) {
    const batch = await context.images.listCreatedBefore({ stage: "test", createdBefore, limit: batchSize });
    let progressed = false;
    for (const record of batch) {
      if (await removeImage(context, record)) {
        removed += 1;
        progressed = true;
      }
    }
    if (batch.length < batchSize || !progressed) return removed;
  }
}
