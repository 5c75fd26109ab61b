import { describe, expect, it } from "vitest";
import {
  type Caller,
  createImagePipeline,
  createMemoryQuotaStore,
  ErrorCodes,
  type ImageCodec,
  type ImagePipeline,
  isImagePipelineError,
  OPERATIONS_TABLE,
  type OperationId,
  type QuotaReserveRequest,
  type QuotaStore,
} from "../src/index.js";
import { BILLING_UNITS } from "../src/policies/billing.js";
import { memoryDeps } from "./memory-deps.js";

// The table says how each operation runs; these tests watch what the pipeline actually does with
// a call (does it hold a slot of the work gate? does it reserve quota, and how much?) and hold the
// two to each other, so a row and its runner cannot drift apart.

// A per-key limit high enough that admitting every operation in a row is never rate limited.
const caller: Caller = { accountId: "acct", keyKind: "live", keyId: "key", rateLimitPerMinute: 1000 };

/** No pixel work happens here: every call below fails validation inside its runner. */
const codec: ImageCodec = {
  name: "fake",
  capabilities: { inputFormats: ["png"], outputFormats: ["jpeg", "png", "webp"], steps: [] },
  probe: async () => ({ format: "png", width: 1, height: 1 }),
  transform: async () => {
    throw new Error("no transform expected");
  },
};

/** A pipeline whose quota store holds every reservation until `open()`, with a one-slot gate. */
function harness() {
  const inner = createMemoryQuotaStore();
  const reservations: QuotaReserveRequest[] = [];
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  let entered!: () => void;
  const reserving = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const quota: QuotaStore = {
    reserve: async (request) => {
      reservations.push(request);
      entered();
      await opened;
      return inner.reserve(request);
    },
    release: (request) => inner.release(request),
    usage: (accountId, period) => inner.usage(accountId, period),
  };
  const pipeline = createImagePipeline(memoryDeps(codec, { quota }), {
    workQueue: { maxActive: 1, maxQueued: 0, maxWaitMs: 60_000 },
  });
  return {
    pipeline,
    reservations,
    /** Resolves once a reservation is waiting. */
    reserving: () => reserving,
    open: () => open(),
  };
}

type Untyped = (caller: Caller, input: unknown) => Promise<unknown>;
const call = (pipeline: ImagePipeline, id: OperationId, input: unknown) =>
  (pipeline[id as Exclude<OperationId, "deliverVariant">] as Untyped)(caller, input);

const CALLER_OPERATIONS = (Object.keys(OPERATIONS_TABLE) as OperationId[]).filter(
  (id) => id !== "deliverVariant",
);

/** What the pipeline did with one call: the slot it held and the units it reserved. */
async function observe(id: OperationId) {
  const { pipeline, reservations, reserving, open } = harness();
  // `{}` fails validation in every operation but the list (which runs, reading an empty store);
  // validation runs inside the runner, so the gate and the quota see the call first.
  const settled = call(pipeline, id, {}).then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await Promise.race([reserving(), settled]);
  const active = pipeline.load()?.active ?? 0;
  const units = reservations.reduce((sum, request) => sum + request.units, 0);
  open();
  const outcome = await settled;
  return { active, units, reservations: reservations.length, outcome };
}

describe("the operations table and the runners agree", () => {
  it.each(CALLER_OPERATIONS)("%s: the slot it holds and the units it reserves are its row's", async (id) => {
    const row = OPERATIONS_TABLE[id];
    const seen = await observe(id);
    expect(seen.active).toBe(row.runner === "gated" ? 1 : 0);
    expect(seen.units).toBe("billing" in row ? row.billing : 0);
    expect(seen.reservations).toBe(row.runner === "free" ? 0 : 1);
    expect(BILLING_UNITS[id as keyof typeof BILLING_UNITS] ?? 0).toBe(seen.units);
    if (id !== "listImages") {
      expect(isImagePipelineError(seen.outcome.ok ? null : seen.outcome.error)).toBe(true);
    }
  });

  it("matches the contract's facts: transforms are gated image jobs, remove-background bills 2, reads are free", async () => {
    expect(await observe("resizeImage")).toMatchObject({ active: 1, units: 1 });
    expect(await observe("uploadImage")).toMatchObject({ active: 1, units: 1 });
    expect(await observe("removeImageBackground")).toMatchObject({ active: 1, units: 2 });
    expect(await observe("imagineImage")).toMatchObject({ active: 0, units: 1 });
    expect(await observe("publishImage")).toMatchObject({ active: 0, units: 1 });
    expect(await observe("getImage")).toMatchObject({ active: 0, units: 0 });
    expect(await observe("createSignedUrl")).toMatchObject({ active: 0, units: 0 });
  });

  it("refuses gated calls and their admission while the gate is full; the others go on", async () => {
    const { pipeline, reservations, reserving, open } = harness();
    // One gated call holds the only slot (waiting on its reservation).
    const holder = call(pipeline, "resizeImage", {}).catch((error: unknown) => error);
    await reserving();
    expect(pipeline.load()).toMatchObject({ active: 1 });
    reservations.length = 0;
    for (const id of CALLER_OPERATIONS) {
      const gated = OPERATIONS_TABLE[id].runner === "gated";
      const admitted = await pipeline.admit(caller, id).then(
        () => "admitted",
        (error: unknown) => (isImagePipelineError(error) ? error.code : "other"),
      );
      expect([id, admitted]).toEqual([id, gated ? ErrorCodes.OVERLOADED : "admitted"]);
      if (gated) {
        const refused = await call(pipeline, id, {}).catch((error: unknown) => error);
        expect([id, isImagePipelineError(refused) && refused.code]).toEqual([id, ErrorCodes.OVERLOADED]);
        // Refused before any quota is reserved.
        expect(reservations).toHaveLength(0);
      }
    }
    open();
    expect(isImagePipelineError(await holder)).toBe(true);
  });

  it("delivers variants without a slot or a reservation of its own (free)", async () => {
    const { pipeline, reservations } = harness();
    const error = await pipeline
      .deliverVariant({ signature: "x", imageId: "bad", file: "_.png" })
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.VALIDATION_FAILED);
    expect(reservations).toHaveLength(0);
    expect(OPERATIONS_TABLE.deliverVariant.runner).toBe("free");
  });
});
