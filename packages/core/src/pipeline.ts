import { CONTRACT_FORMATS } from "./image.js";
import { createJobRunner, type JobRunner } from "./job-runner.js";
import type { Limits } from "./limits.js";
import { authenticate } from "./operations/authenticate.js";
import type { Caller, PipelineContext } from "./operations/context.js";
import type { OriginVariantRequest } from "./operations/deliver-origin-variant.js";
import {
  createBlobVariantCache,
  type DeliveredVariant,
  type VariantRequest,
} from "./operations/deliver-variant.js";
import { createFactsScheduler } from "./operations/image-facts.js";
import { sweepExpiredTestImages } from "./operations/sweep-expired-images.js";
import { type SweepOrphansResult, sweepOrphans } from "./operations/sweep-orphans.js";
import {
  OPERATION_IDS,
  OPERATIONS_TABLE,
  type OperationEnv,
  type OperationId,
  type OperationInput,
  type OperationResult,
  type OperationRow,
  runnerOf,
} from "./operations/table.js";
import { parseOptions } from "./options.js";
import { createDeliveries, variantsPeriod } from "./pipeline-delivery.js";
import {
  type ImagePipelineDeps,
  type ImagePipelineOptions,
  imagePipelineOptionsSchema,
  resolvePipelineContext,
} from "./pipeline-options.js";
import { admitRequest, quotaPeriod } from "./policies/limits-policy.js";
import { createModelCircuitBreaker, guardModelPorts } from "./policies/model-circuit.js";
import { createWorkGate, type WorkGateStats } from "./policies/work-gate.js";
import type { ModelPorts } from "./ports/models.js";
import type { RateLimitDecision } from "./ports/rate-limiter.js";

export {
  type ImagePipelineDeps,
  type ImagePipelineOptions,
  imagePipelineOptionsSchema,
} from "./pipeline-options.js";
export { variantsPeriod };

/** An account's usage of one month: what {@link ImagePipeline.usage} answers. */
export interface AccountUsage {
  /** The month, `YYYY-MM` (UTC). */
  period: string;
  /** Billed images (processed images, uploads, imports) in the month. */
  images: number;
  /** The account's monthly cap: `policies.trialImagesPerMonth` for a trial account, `null` when upgraded. */
  limit: number | null;
  /** Variants computed for its images' delivery URLs in the month (cache misses; not billed). */
  variants: number;
}

/**
 * Every operation of the table as a method: `(caller, input) => result`, the input typed from the
 * operation's schemas (`z.input`: a misspelt field or a wrong type is a compile error) and
 * validated at run time too (JavaScript callers, HTTP bodies), with the same 422 issues.
 */
export type OperationMethods = {
  [K in OperationId as K extends "deliverVariant" | "deliverOriginVariant" ? never : K]: (
    caller: Caller,
    input: OperationInput<K>,
  ) => Promise<OperationResult<K>>;
};

/** Every operation of the IMG Processing API in scope, bound to one set of adapters. */
export interface ImagePipeline extends OperationMethods {
  /** The limits the pipeline enforces (upload bytes, pixels, frames, output size, ...). */
  readonly limits: Readonly<Limits>;
  /** The account's usage of this month, or of the month of `at`. */
  usage(accountId: string, at?: Date): Promise<AccountUsage>;
  /** Bytes reserved by image jobs against the `memoryBudget`; `null` without one. */
  memory(): { reservedBytes: number; waiting: number; maxBytes: number } | null;
  authenticate(apiKey: string | null | undefined): Promise<Caller>;
  /**
   * Counts one request of the caller against its per-minute limit. Resolves the decision (for
   * rate-limit headers; `null` when the limiter is down and the policy is fail-open); rejects with
   * `RATE_LIMITED` (a {@link RateLimitedError}) when the limit is used up. Given the `operationId`
   * of an image job (a create, a transform, remove-background), it first rejects with `OVERLOADED`
   * when the work queue is full, so a request the node refuses does not use up the key's limit.
   */
  admit(caller: Caller, operationId?: string): Promise<RateLimitDecision | null>;
  /**
   * A server's first step for a request of `operationId`, before its key is looked up or its body
   * read: for an image job it throws `OVERLOADED` when the work queue is full, else holds a place
   * in it until the returned release (call it before reading the body, and again at the end: it
   * runs once). Every other operation, or a pipeline without a `workQueue`, gets a no-op release.
   * The refusal needs no I/O, so it stays fast while the disk and the thread pool are busy.
   */
  holdWork(operationId: string): () => void;
  /**
   * The model circuit breaker's circuits used so far (`{port}:{model}`, e.g. `vision:gpt-4o`) and
   * their state; empty when the breaker is off. For metrics and health pages.
   */
  modelCircuits(): { key: string; status: "closed" | "open" | "half-open" }[];
  /**
   * Stops the pipeline's background work (the facts of new images): the image in progress is
   * finished, the rest is left to first metadata requests. Call it before closing the stores.
   */
  stopBackgroundWork(): Promise<void>;
  /** Jobs running and waiting in the `workQueue` gate; `null` without a `workQueue`. */
  load(): WorkGateStats | null;
  /** Retention: removes test-stage images older than `policies.testRetentionDays`. Returns the count. */
  sweepExpiredTestImages(): Promise<number>;
  /**
   * Repair: removes private bytes no record refers to and public copies without a published
   * record, written more than `graceMs` ago (default 1 hour), from stores that can list keys.
   */
  sweepOrphans(options?: { graceMs?: number }): Promise<SweepOrphansResult>;
  /**
   * `GET /v/{signature}/{image_id}/{modifiers}.{ext}`: a variant of a published image (or of any
   * image of a URL made by `createSignedUrl`, until it expires), computed once and cached. No key,
   * not billed, not rate limited; misses take a slot of the work gate.
   */
  deliverVariant(request: VariantRequest): Promise<DeliveredVariant>;
  /**
   * `GET /v/{signature}/o/{origin}/{modifiers}/{path}.{ext}`: a variant of an image that lives on
   * an origin (`origins` and `delivery.origins`), signed like `deliverVariant`'s URLs or unsigned
   * within the origin's allow-list. The original is fetched once per node at a time, kept and
   * revalidated; the variant follows the rules of `deliverVariant` (cache, `Accept`, work gate),
   * its misses counted against the origin's account.
   *
   * @example
   * ```ts
   * const variant = await pipeline.deliverOriginVariant({
   *   signature, origin: "cms", modifiers: "w_640", path: "products/shoe.jpg.auto", accept,
   * });
   * ```
   */
  deliverOriginVariant(request: OriginVariantRequest): Promise<DeliveredVariant>;
}

/**
 * Builds every operation over one set of adapters.
 *
 * @example
 * ```ts
 * const pipeline = createImagePipeline({
 *   codec: createSharpCodec(),
 *   blobStore, images, keys, publisher, // keys and publisher: only to authenticate and publish
 * });
 * const caller = await pipeline.authenticate(request.headers["x-api-key"]);
 * const image = await pipeline.resizeImage(caller, { imageId, body: { width: 800 } });
 * // { widht: 800 } does not compile; from JavaScript it is a 422 naming the field.
 * ```
 */
export function createImagePipeline(
  deps: ImagePipelineDeps,
  options: ImagePipelineOptions = {},
): ImagePipeline {
  const settings = parseOptions(imagePipelineOptionsSchema, options, "pipeline");
  const context = resolvePipelineContext(deps, settings);
  warnUnencodableFormats(context);
  const breaker =
    settings.modelCircuit === false
      ? undefined
      : createModelCircuitBreaker(settings.modelCircuit, context.clock);
  const models: ModelPorts =
    breaker === undefined ? { ...deps.models } : guardModelPorts({ ...deps.models }, breaker);
  const gate = settings.workQueue === undefined ? undefined : createWorkGate(settings.workQueue);
  const variantCache =
    deps.variantCache ?? createBlobVariantCache(deps.blobStore, { maxBytes: settings.variantCacheBytes });
  context.variants = variantCache;
  const runner = createJobRunner(context.policy, gate);
  const facts = createFactsScheduler(context, () => runner.busy());
  if (settings.backgroundFacts) context.afterCreate = (record) => facts.schedule(record);
  const { delivery, originDelivery } = createDeliveries(context, deps, settings, variantCache, gate);
  const env: OperationEnv = {
    context,
    models,
    backgroundRemover: deps.backgroundRemover,
    delivery,
    originDelivery,
  };

  const pipeline: ImagePipeline = {
    ...tableMethods(runner, env),
    limits: context.limits,
    usage: (accountId, at = context.clock.now()) => accountUsage(context, accountId, at),
    memory: () => context.memory?.stats() ?? null,
    authenticate: (apiKey) => authenticate(context, apiKey),
    admit: async (caller, operationId) => {
      if (operationId !== undefined && gate !== undefined && runnerOf(operationId) === "gated") {
        gate.assertRoom();
      }
      return admitRequest(context.policy, caller);
    },
    holdWork: (operationId) =>
      gate !== undefined && runnerOf(operationId) === "gated" ? gate.hold() : () => undefined,
    load: () => gate?.stats() ?? null,
    modelCircuits: () => breaker?.list() ?? [],
    stopBackgroundWork: () => facts.stop(),
    sweepExpiredTestImages: () => {
      const days = context.policy.policies.testRetentionDays;
      const createdBefore = new Date(context.clock.now().getTime() - days * 24 * 60 * 60 * 1000);
      return sweepExpiredTestImages(context, { createdBefore });
    },
    sweepOrphans: (options = {}) =>
      sweepOrphans(context, {
        writtenBefore: new Date(context.clock.now().getTime() - (options.graceMs ?? 60 * 60 * 1000)),
      }),
    deliverVariant: (request) => delivery.deliver(request),
    deliverOriginVariant: (request) => originDelivery.deliver(request),
  };
  CONTEXTS.set(pipeline, context);
  return pipeline;
}

/** A codec that cannot write every format of the contract works, but says which it lacks. */
function warnUnencodableFormats(context: PipelineContext): void {
  const missing = CONTRACT_FORMATS.filter(
    (format) => !context.codec.capabilities.outputFormats.includes(format),
  );
  if (missing.length > 0) {
    context.logger.warn?.(`codec ${context.codec.name} cannot encode: ${missing.join(", ")}`);
  }
}

/** Every operation of the table (deliveries aside) as a method run by the job runner. */
function tableMethods(runner: JobRunner, env: OperationEnv): OperationMethods {
  return Object.fromEntries(
    OPERATION_IDS.filter((id) => id !== "deliverVariant" && id !== "deliverOriginVariant").map((id) => {
      const row = OPERATIONS_TABLE[id] as OperationRow<unknown, unknown, unknown>;
      // Validation runs inside the runner, as the operation's first step: a request refused by
      // the gate or the quota is refused before its body is looked at, as it always was.
      return [id, runner.wrap(row, (caller, input) => row.run(env, caller, row.parse(input, env.context)))];
    }),
  ) as OperationMethods;
}

/** {@link ImagePipeline.usage}: the account's billed images and computed variants in the month of `at`. */
async function accountUsage(context: PipelineContext, accountId: string, at: Date): Promise<AccountUsage> {
  const { quota, accounts, policies } = context.policy;
  const period = quotaPeriod(at);
  const [images, variants, account] = await Promise.all([
    quota.usage(accountId, period),
    quota.usage(accountId, variantsPeriod(at)),
    accounts.get(accountId),
  ]);
  return {
    period,
    images,
    limit: account?.upgraded === true ? null : policies.trialImagesPerMonth,
    variants,
  };
}

const CONTEXTS = new WeakMap<ImagePipeline, PipelineContext>();

/**
 * The adapters and settings a pipeline runs on, for pixport's own packages and tests (exported from
 * `@pixport/core/internal` only): library code uses the pipeline's methods, `limits` and `usage()`.
 */
export function pipelineContext(pipeline: ImagePipeline): PipelineContext {
  const context = CONTEXTS.get(pipeline);
  if (context === undefined) throw new Error("not a pipeline made by createImagePipeline");
  return context;
}
