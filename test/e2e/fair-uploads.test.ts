import {
  keepUploadingSlowly,
  type SlowUpload,
  slowUpload,
  type UploadAnswer,
  uploadOnce,
} from "@pixport/testing";
import { describe, expect, it } from "vitest";
import { call, halves, newKey, type ServerHandle, uploadForm, useServer } from "./harness.js";

/** The contract's error body fields these tests read. */
type ErrorBody = { status?: number; error?: string; code?: string; message?: string };

/** An upload that sends its headers and the start of its body, then one byte every 300 ms. */
const trickle = (url: string, key: string): SlowUpload =>
  slowUpload({ url, key, declaredBytes: 100_000, everyMs: 300 });

describe("fair uploads: trickling bodies cannot hold every slot", () => {
  const handle = useServer({ uploadGraceMs: 1_500 });

  it("keeps 32 trickling uploads of one key to its account's slots, serves another account, then cuts the trickles off", async () => {
    const greedy = await newKey(handle.server, "live", "greedy");
    const other = await newKey(handle.server, "live", "other");
    const trickles = Array.from({ length: 32 }, () => trickle(handle.url, greedy));
    try {
      // Every upload beyond the account's 8 slots is refused at once, unread.
      const settled = await Promise.all(
        trickles.map((item) =>
          Promise.race([
            item.answered,
            new Promise<"holding">((resolve) => setTimeout(() => resolve("holding"), 1_000)),
          ]),
        ),
      );
      const refused = settled.filter((entry): entry is UploadAnswer => entry !== "holding");
      expect(settled.filter((entry) => entry === "holding")).toHaveLength(8);
      expect(refused).toHaveLength(24);
      for (const answer of refused) {
        expect(answer.status).toBe(503);
        expect(answer.body).toMatchObject({ code: "OVERLOADED", status: 503 });
        expect(answer.ms).toBeLessThan(1_000);
      }
      // Another tenant uploads while the trickles hold their slots.
      const png = await halves(16, 8, [255, 0, 0], [0, 0, 255]);
      for (let index = 0; index < 3; index++) {
        const uploaded = await call(handle.url, "POST", "/v1/images/upload", {
          key: other,
          form: uploadForm("o", png),
        });
        expect(uploaded.status).toBe(201);
      }
      // After the grace period the trickles are far below the minimum rate: 408 and the slots free.
      const cut = await Promise.all(trickles.map((item) => item.answered.catch((error: Error) => error)));
      const timedOut = cut.filter(
        (entry): entry is UploadAnswer => !(entry instanceof Error) && entry.status === 408,
      );
      expect(timedOut).toHaveLength(8);
      for (const answer of timedOut) {
        expect(answer.body).toMatchObject({ status: 408, error: "Request Timeout", code: "REQUEST_TIMEOUT" });
        expect((answer.body as ErrorBody).message).toMatch(/too slowly/);
        expect(answer.ms).toBeLessThan(5_000);
      }
      const again = await call(handle.url, "POST", "/v1/images/upload", {
        key: greedy,
        form: uploadForm("g", png),
      });
      expect(again.status).toBe(201);
    } finally {
      for (const item of trickles) item.stop();
    }
  }, 30_000);
});

/**
 * Trial accounts that each keep `connections` trickling uploads open, reopening one as soon as it
 * is answered (after 100 ms on a 503), while a well-behaved tenant makes `rounds` uploads one after
 * the other. Returns the tenant's answers and the trickles'.
 */
async function tenantBesideTrickles(
  handle: ServerHandle,
  { accounts, connections, rounds }: { accounts: number; connections: number; rounds: number },
) {
  const trialKeys = await Promise.all(
    Array.from({ length: accounts }, (_, index) =>
      newKey(handle.server, "live", `trial-${index}`, { trial: true }),
    ),
  );
  const good = await newKey(handle.server, "live", "well-behaved");
  const trickled: { status: number; message: string }[] = [];
  const stops = trialKeys.flatMap((key) =>
    Array.from({ length: connections }, () =>
      keepUploadingSlowly({
        url: handle.url,
        key,
        declaredBytes: 100_000,
        everyMs: 300,
        pauseAfter503Ms: 100,
        onAnswer: (answer) => {
          if (answer === null) return;
          trickled.push({ status: answer.status, message: (answer.body as ErrorBody)?.message ?? "" });
        },
      }),
    ),
  );
  const tenant: UploadAnswer[] = [];
  try {
    // The trickles take every slot before the tenant comes.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const png = await halves(16, 8, [255, 0, 0], [0, 0, 255]);
    for (let round = 0; round < rounds; round++) tenant.push(await uploadOnce(handle.url, good, png));
  } finally {
    await Promise.all(stops.map((stop) => stop()));
  }
  return { tenant, trickled };
}

describe("fair uploads: many accounts trickling and reconnecting cannot keep another tenant out", () => {
  // Few slots, all of them taken by four trial accounts (two each), and a grace period longer than
  // the test, so only the fairness rule (fairUploadAfterMs at its default) can free a slot.
  const handle = useServer({
    maxConcurrentUploads: 8,
    maxConcurrentUploadsPerAccount: 2,
    uploadGraceMs: 120_000,
  });

  it("gives a well-behaved upload of another tenant a slot taken from the slowest body, again and again", async () => {
    const { tenant, trickled } = await tenantBesideTrickles(handle, {
      accounts: 4,
      connections: 2,
      rounds: 3,
    });
    expect(tenant).toHaveLength(3);
    for (const uploaded of tenant) {
      expect(uploaded.status).toBe(201);
      expect(uploaded.body).toMatchObject({ format: "png", width: 16, height: 8 });
      // Generous: the rule frees a slot after about 2 s; the bound only catches a starved tenant.
      expect(uploaded.ms).toBeLessThan(15_000);
    }
    // The slots came from trickles, cut with the contract's 408 saying why; none got a 5xx else.
    const cut = trickled.filter((answer) => answer.status === 408);
    expect(cut.length).toBeGreaterThanOrEqual(3);
    for (const answer of cut) expect(answer.message).toMatch(/too slowly while other uploads waited/);
    expect(trickled.filter((answer) => answer.status !== 408 && answer.status !== 503)).toEqual([]);
  }, 60_000);
});

describe("fair uploads: more trickling accounts than slots", () => {
  // Ten trial accounts with two trickles each (20) for 16 slots: the slots are always full, and the
  // four trickles left over keep waiting and reconnecting, so fresh trickles keep taking the slots
  // that older ones lose. The tenant must still be admitted each time, from the slots that turn
  // over, never starved by the churn (the wait is bounded by the rule, so a starved tenant gets
  // a 503, not a late 201).
  const handle = useServer({
    maxConcurrentUploads: 16,
    maxConcurrentUploadsPerAccount: 2,
    uploadGraceMs: 120_000,
  });

  it("admits every upload of a well-behaved tenant while 10 accounts trickle into 16 slots", async () => {
    const { tenant, trickled } = await tenantBesideTrickles(handle, {
      accounts: 10,
      connections: 2,
      rounds: 4,
    });
    expect(tenant.map((uploaded) => uploaded.status)).toEqual([201, 201, 201, 201]);
    for (const uploaded of tenant)
      expect(uploaded.body).toMatchObject({ format: "png", width: 16, height: 8 });
    // The slots it got were taken from trickles, cut with the contract's 408 saying why; no trickle
    // got anything but that or a 503.
    const cut = trickled.filter((answer) => answer.status === 408);
    expect(cut.length).toBeGreaterThanOrEqual(4);
    for (const answer of cut) expect(answer.message).toMatch(/too slowly while other uploads waited/);
    expect(trickled.filter((answer) => answer.status !== 408 && answer.status !== 503)).toEqual([]);
  }, 90_000);
});
