import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  createUploadAdmission,
  type UploadAdmissionLimits,
  type UploadSlot,
} from "../src/upload-admission.js";

// The admission reads the time from performance.now() and re-examines its waiters on an interval:
// both are faked, so every rule is checked at exact times, with no sleep and no timing threshold.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** 2 slots, 2 per account; a body must average 1,000 B/s once it has held its slot 1 s. */
const LIMITS: UploadAdmissionLimits = {
  maxConcurrentUploads: 2,
  maxConcurrentUploadsPerAccount: 2,
  fairUploadBytesPerSecond: 1000,
  fairUploadAfterMs: 1000,
};

/** An admission's outcome, observed without awaiting it (it may still be waiting). */
function watch(admitted: Promise<UploadSlot>) {
  const outcome: { slot?: UploadSlot; error?: { code?: string; message?: string }; waited: boolean } = {
    waited: false,
  };
  admitted.then(
    (slot) => {
      outcome.slot = slot;
    },
    (error: { code?: string; message?: string }) => {
      outcome.error = error;
    },
  );
  return outcome;
}

/** Admits for `account`, noting whether it had to wait. */
function admit(admission: ReturnType<typeof createUploadAdmission>, account?: string, signal?: AbortSignal) {
  let waited = false;
  const outcome = watch(
    admission.admit(account, signal, () => {
      waited = true;
    }),
  );
  return Object.assign(outcome, {
    get waitedNow() {
      return waited;
    },
  });
}

/** Advances the fake clock and lets the promises it settled run. */
async function after(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

const settled = () => vi.advanceTimersByTimeAsync(0);

describe("upload admission", () => {
  it("grants free slots at once, and refuses an account's upload beyond its share", async () => {
    const admission = createUploadAdmission({ ...LIMITS, maxConcurrentUploads: 4 });
    const first = admit(admission, "a");
    const second = admit(admission, "a");
    const third = admit(admission, "a");
    await settled();
    expect(first.slot).toBeDefined();
    expect(second.slot).toBeDefined();
    expect(third.error?.code).toBe("OVERLOADED");
    expect(third.error?.message).toContain("already has 2 uploads in progress");
    // Uploads without an account are not capped per account.
    const anonymous = [admit(admission), admit(admission)];
    await settled();
    expect(anonymous.every((outcome) => outcome.slot !== undefined)).toBe(true);
    // A slot given back counts no more (twice changes nothing).
    first.slot?.release();
    first.slot?.release();
    const again = admit(admission, "a");
    await settled();
    expect(again.slot).toBeDefined();
  });

  it("refuses at once when every slot is held by a body already read or by the same account", async () => {
    const admission = createUploadAdmission(LIMITS);
    const read = admit(admission, "a");
    const own = admit(admission, "b");
    await settled();
    read.slot?.bodyRead();
    // b's own slot cannot be taken for b, a's body is complete: nothing can be freed.
    const refused = admit(admission, "b");
    await settled();
    expect(refused.error?.code).toBe("OVERLOADED");
    expect(refused.waitedNow).toBe(false);
    expect(own.slot?.signal.aborted).toBe(false);
  });

  it("never takes a slot back with fairUploadBytesPerSecond 0", async () => {
    const admission = createUploadAdmission({ ...LIMITS, fairUploadBytesPerSecond: 0 });
    admit(admission, "a");
    admit(admission, "a");
    const refused = admit(admission, "b");
    await settled();
    expect(refused.error?.code).toBe("OVERLOADED");
  });

  it("takes back the slot of a body too slow for its time held, for another account's waiting upload", async () => {
    const admission = createUploadAdmission(LIMITS);
    const slow = admit(admission, "a");
    const fast = admit(admission, "a");
    await settled();
    const waiting = admit(admission, "b");
    await settled();
    expect(waiting.waitedNow).toBe(true);
    expect(waiting.slot).toBeUndefined();
    // Before fairUploadAfterMs no body is judged, however little it sent.
    await after(900);
    expect(waiting.slot).toBeUndefined();
    // At 1 s a body needs 1,000 B: the fast one has them, the slow one has not.
    fast.slot?.received(1000);
    slow.slot?.received(999);
    await after(200);
    expect(waiting.slot).toBeDefined();
    expect(slow.slot?.signal.aborted).toBe(true);
    expect(slow.slot?.signal.reason).toMatchObject({ code: "REQUEST_TIMEOUT" });
    expect(fast.slot?.signal.aborted).toBe(false);
  });

  it("asks more the longer a body holds its slot: the rate times the time held, times the time over fairUploadAfterMs", async () => {
    const admission = createUploadAdmission(LIMITS);
    const early = admit(admission, "a");
    const other = admit(admission, "a");
    await settled();
    other.slot?.bodyRead();
    // 2,000 B at once, then nothing: at 1.4 s held it needs 1,000 x 1.4 x 1.4 = 1,960 B (kept),
    // at 1.5 s 2,250 B (taken back), where a flat 1,000 B/s would ask only 1,500 B.
    early.slot?.received(2000);
    await after(1000);
    const waiting = admit(admission, "b");
    await after(400);
    expect(waiting.slot).toBeUndefined();
    expect(early.slot?.signal.aborted).toBe(false);
    await after(100);
    expect(waiting.slot).toBeDefined();
    expect(early.slot?.signal.aborted).toBe(true);
  });

  it("keeps a body that keeps the growing rate, and refuses the waiting upload after twice fairUploadAfterMs", async () => {
    const admission = createUploadAdmission(LIMITS);
    const holders = [admit(admission, "a"), admit(admission, "a")];
    await settled();
    for (const holder of holders) holder.slot?.received(1_000_000);
    const waiting = admit(admission, "b");
    await after(1900);
    expect(waiting.slot).toBeUndefined();
    expect(waiting.error).toBeUndefined();
    await after(200);
    expect(waiting.error?.code).toBe("OVERLOADED");
    expect(holders.every((holder) => holder.slot?.signal.aborted === false)).toBe(true);
  });

  it("takes back the slowest of the slow bodies first", async () => {
    const admission = createUploadAdmission(LIMITS);
    const slower = admit(admission, "a");
    const slow = admit(admission, "c");
    await settled();
    slower.slot?.received(100);
    slow.slot?.received(500);
    await after(1000);
    const waiting = admit(admission, "b");
    await settled();
    expect(waiting.slot).toBeDefined();
    expect(slower.slot?.signal.aborted).toBe(true);
    expect(slow.slot?.signal.aborted).toBe(false);
  });

  it("does not take a slot from an account holding fewer slots than the waiting upload's account", async () => {
    const admission = createUploadAdmission({
      ...LIMITS,
      maxConcurrentUploads: 3,
      maxConcurrentUploadsPerAccount: 3,
    });
    const rich = [admit(admission, "a"), admit(admission, "a")];
    const poor = admit(admission, "b");
    await settled();
    for (const holder of rich) holder.slot?.bodyRead();
    await after(1000);
    // a holds 2 slots, b 1: a's upload may not take b's slow slot ...
    const fromRich = admit(admission, "a");
    await settled();
    expect(fromRich.error?.code).toBe("OVERLOADED");
    expect(fromRich.error?.message).toContain("receiving 3 uploads");
    expect(poor.slot?.signal.aborted).toBe(false);
    // ... but an account holding none may (b holds 1, c none).
    const fromNew = admit(admission, "c");
    await settled();
    expect(fromNew.slot).toBeDefined();
    expect(poor.slot?.signal.aborted).toBe(true);
  });

  it("serves waiting uploads of accounts holding the fewest slots first, then first come", async () => {
    const admission = createUploadAdmission({ ...LIMITS, maxConcurrentUploads: 3 });
    const holders = [admit(admission, "a"), admit(admission, "a"), admit(admission, "b")];
    await settled();
    const fromA = admit(admission, "b"); // b holds 1
    const fromC = admit(admission, "c"); // c holds none, came later
    const fromD = admit(admission, "d"); // d holds none, came last
    await settled();
    expect([fromA, fromC, fromD].every((waiter) => waiter.waitedNow)).toBe(true);
    holders[0]?.slot?.release();
    await settled();
    expect(fromC.slot).toBeDefined();
    expect(fromD.slot).toBeUndefined();
    holders[1]?.slot?.release();
    await settled();
    expect(fromD.slot).toBeDefined();
    expect(fromA.slot).toBeUndefined();
  });

  it("keeps at most maxConcurrentUploads waiting: a newcomer of a poorer account pushes out the last of a richer one", async () => {
    const admission = createUploadAdmission({
      ...LIMITS,
      maxConcurrentUploadsPerAccount: 3,
      maxConcurrentUploads: 2,
    });
    admit(admission, "a");
    admit(admission, "b");
    await settled();
    const fromA = admit(admission, "a");
    const fromB = admit(admission, "b");
    await settled();
    expect(fromA.waitedNow && fromB.waitedNow).toBe(true);
    // c holds nothing: b's waiting upload (b holds as many as a, and came later) makes room.
    const fromC = admit(admission, "c");
    await settled();
    expect(fromB.error?.code).toBe("OVERLOADED");
    expect(fromC.waitedNow).toBe(true);
    // A newcomer of an account as rich as the last waiter's is refused itself.
    const alsoA = admit(admission, "a");
    await settled();
    expect(alsoA.error?.code).toBe("OVERLOADED");
    expect(fromA.error).toBeUndefined();
  });

  it("ends a wait when the client goes away", async () => {
    const admission = createUploadAdmission(LIMITS);
    const holders = [admit(admission, "a"), admit(admission, "a")];
    await settled();
    const gone = new AbortController();
    const waiting = admit(admission, "b", gone.signal);
    await settled();
    gone.abort(new Error("client closed"));
    await settled();
    expect(waiting.error?.message).toBe("client closed");
    // Gone from the queue: the freed slot goes to nobody, and the next upload gets it at once.
    holders[0]?.slot?.release();
    const next = admit(admission, "c");
    await settled();
    expect(next.slot).toBeDefined();
    expect(next.waitedNow).toBe(false);
  });
});
