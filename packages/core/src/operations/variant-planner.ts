import type { ImageRecord } from "../image.js";
import { LruMap } from "../lru.js";
import type { PipelineContext } from "./context.js";
import type { OriginalHeader } from "./origin-originals.js";
import type { ResolvedDeliveryOptions } from "./variant-options.js";
import { planVariant, type VariantPlan } from "./variant-plan.js";
import { sha256Hex } from "./variant-request.js";

/*
 * A variant's plan and its place in the variant cache, for stored images and origin originals
 * alike. Hits repeat the same URLs, and planning walks the steps twice while SHA-256 over Web
 * Crypto costs more than the cache lookup, so each URL's plan and keys are remembered (bounded).
 */

/** A variant URL as planned: its hinted width applied (client-hints.ts). */
export type PlannedUrl = Parameters<typeof planVariant>[2];

/** The source of a variant, by what planning reads of it: its header, never its bytes. */
export type PlanSource =
  /** A stored image: its blob never changes; its facts may arrive after its first variant. */
  | { imageId: string; record: ImageRecord }
  /**
   * An origin's original at `path` (its URL's `{path}` as sent, without the extension), by the
   * header this node read: its version names its bytes, which may change under the same path.
   */
  | { origin: string; path: string; header: OriginalHeader };

/** A planned variant and where it is cached. */
export interface PlannedVariant {
  plan: VariantPlan;
  /** The image id the variant cache keeps it under: a stored image's id, or its origin path's digest. */
  cacheId: string;
  /** Its key there: the plan's identity (and an original's version) hashed, with its extension. */
  key: string;
}

/** How a source keys its plans, one shape for both kinds. */
interface Described {
  /** Names the source and every fact of it its plan depends on (part of the memo key). */
  memo: string;
  /** Hashed after the plan's identity into the cache key. */
  keySuffix: string;
}

/** The original as the record-shaped source the planner reads (size, format, frames). */
function recordOf(original: OriginalHeader): ImageRecord {
  return {
    id: "origin",
    accountId: "",
    stage: "live",
    name: "origin",
    format: original.format,
    width: original.width,
    height: original.height,
    size: original.size,
    createdAt: new Date(0).toISOString(),
    blobKey: "origin",
    url: null,
    ...(original.frames > 1 ? { frames: original.frames } : {}),
  };
}

function describe(source: PlanSource): Described {
  if ("record" in source) {
    const { imageId, record } = source;
    return {
      memo: `${imageId}|${record.blobKey}|${record.facts === undefined ? "" : "f"}`,
      keySuffix: "",
    };
  }
  const { origin, path, header } = source;
  return {
    memo: `${origin}\n${path}|${header.version}`,
    // One path's original can change: variants of older bytes are then other entries, never served.
    keySuffix: `|src=${header.version}`,
  };
}

/** The image id a source's variants are cached under. */
async function cacheIdOf(source: PlanSource): Promise<string> {
  if ("record" in source) return source.imageId;
  return `o/${source.origin}/${(await sha256Hex(`${source.origin}\n${source.path}`)).slice(0, 40)}`;
}

/**
 * The planner of one delivery: `plan(url, source, accept)` plans the variant `url` asks of `source`
 * for a request accepting `accept`, remembering the answer for the same URL, source state and
 * `Accept` (at most `limit` of them, least recently used forgotten first).
 *
 * Only URLs that passed are kept: `url` must have passed this request's checks (spelling,
 * signature, and expiry, which delivery checks on every request before planning, a remembered
 * URL's too), and a plan that refuses (422) is not kept, so a bad URL costs its checks each time
 * and takes no room.
 */
export function createVariantPlanner(
  context: PipelineContext,
  options: ResolvedDeliveryOptions,
  limit = 10_000,
): (url: PlannedUrl, source: PlanSource, accept: string | undefined) => Promise<PlannedVariant> {
  const plans = new LruMap<string, PlannedVariant>({ maxEntries: limit });
  return async (url, source, accept) => {
    const described = describe(source);
    const memoKey = `${described.memo}\n${url.file}|${url.hintedWidth ?? ""}|${accept ?? ""}`;
    let known = plans.get(memoKey);
    if (known === undefined) {
      const record = "record" in source ? source.record : recordOf(source.header);
      const plan = planVariant(context, options, url, record, accept);
      const digest = await sha256Hex(`${plan.identity}${described.keySuffix}`);
      known = {
        plan,
        cacheId: await cacheIdOf(source),
        key: `${digest.slice(0, 40)}.${plan.keyExtension}`,
      };
      plans.set(memoKey, known);
    }
    return known;
  };
}
