import type { z } from "zod";
import { ErrorCodes, ImagePipelineError, isImagePipelineError } from "./errors.js";
import type { PipelineContext } from "./operations/context.js";
import { createOriginDelivery } from "./operations/deliver-origin-variant.js";
import { createBlobVariantCache, createVariantDelivery } from "./operations/deliver-variant.js";
import type { ImagePipelineDeps, imagePipelineOptionsSchema } from "./pipeline-options.js";
import { quotaPeriod } from "./policies/limits-policy.js";
import type { WorkGate } from "./policies/work-gate.js";
import type { VariantCache, VariantSigner } from "./ports/variant-cache.js";

/**
 * The pipeline's two deliveries over one variant cache: variants of stored images and variants of
 * origin images (whose originals are kept in their own cache, `deps.originalCache` or a blob cache
 * under `originals`).
 */
export function createDeliveries(
  context: PipelineContext,
  deps: ImagePipelineDeps,
  settings: Pick<z.output<typeof imagePipelineOptionsSchema>, "delivery" | "originalCacheBytes">,
  variantCache: VariantCache,
  gate: WorkGate | undefined,
) {
  const delivery = deliveryOf(context, deps.variantSigner, variantCache, gate, settings.delivery);
  const originDelivery = createOriginDelivery(
    context,
    {
      sources: deps.origins ?? {},
      signer: deps.variantSigner,
      cache: variantCache,
      originals:
        deps.originalCache ??
        createBlobVariantCache(deps.blobStore, {
          maxBytes: settings.originalCacheBytes,
          prefix: "originals",
        }),
      gate,
      reserveMiss: (accountId) => reserveVariant(context, accountId),
    },
    settings.delivery,
  );
  return { delivery, originDelivery };
}

/**
 * Variant delivery over the pipeline's cache. Variants are delivery, not processed images: never
 * billed, but each computed one (a cache miss) is counted per account in its own counter
 * (`variantsPeriod`), shown by `accounts show`.
 */
function deliveryOf(
  context: PipelineContext,
  signer: VariantSigner | undefined,
  cache: VariantCache,
  gate: WorkGate | undefined,
  options: Parameters<typeof createVariantDelivery>[2],
) {
  return createVariantDelivery(
    context,
    {
      signer,
      cache,
      gate,
      reserveMiss: (accountId) => reserveVariant(context, accountId),
    },
    options,
  );
}

/**
 * Counts one computed variant of `accountId`'s images in the month: trial accounts up to
 * `policies.trialVariantsPerMonth` (past it, `QUOTA_EXCEEDED`), upgraded accounts without a cap. A
 * counter store that is down never blocks delivery: the variant is made uncounted (logged).
 */
async function reserveVariant(context: PipelineContext, accountId: string): Promise<() => Promise<void>> {
  const { quota, accounts, policies } = context.policy;
  const period = variantsPeriod(context.clock.now());
  const uncounted = async () => undefined;
  try {
    const account = await accounts.get(accountId);
    const limit = account?.upgraded === true ? Number.MAX_SAFE_INTEGER : policies.trialVariantsPerMonth;
    const reservation = await quota.reserve({ accountId, period, units: 1, limit });
    if (!reservation.granted) {
      throw new ImagePipelineError(
        ErrorCodes.QUOTA_EXCEEDED,
        `The monthly allowance of ${limit} computed variants of this trial account's images is used up (${reservation.used} in ${period.slice(0, 7)}); variants already made are still served. Upgrade the account to continue.`,
      );
    }
  } catch (error) {
    if (isImagePipelineError(error) && error.code === ErrorCodes.QUOTA_EXCEEDED) throw error;
    context.logger.warn?.("could not count a variant", { accountId, error: String(error) });
    return uncounted;
  }
  return () =>
    quota
      .release({ accountId, period, units: 1 })
      .catch((error: unknown) =>
        context.logger.warn?.("could not give a variant's count back", { accountId, error: String(error) }),
      );
}

/** The counter of an account's computed variants in the month of `now` (e.g. `2026-11/variants`). */
export function variantsPeriod(now: Date): string {
  return `${quotaPeriod(now)}/variants`;
}
