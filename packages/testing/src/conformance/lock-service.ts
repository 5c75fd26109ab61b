import { ErrorCodes, isImagePipelineError, type LockService } from "@pixport/core";
import { describe, expect, it, type TestContext } from "vitest";
import { waitUntil } from "../wait.js";

/** What {@link LockServiceConformanceOptions.create} gives the suite: one lock service and its peers. */
export interface LockServiceTestContext {
  /** A lock service over a fresh namespace of the backend (no key held). */
  locks: LockService;
  /**
   * Another lock service over the same namespace, as another process sharing the backend would
   * build it. Absent for a lock service of one process: the cross-process checks are skipped.
   */
  peer?: () => Promise<LockService>;
  /**
   * A lock service over the same namespace whose wait limit is short (a few hundred ms), for the
   * `STORAGE_UNAVAILABLE` check. Absent for an adapter without a wait limit (its waiters wait as
   * long as the holder runs): that check is skipped.
   */
  impatient?: () => Promise<LockService>;
  /**
   * Takes `key` as a holder that then dies without releasing it (its process killed, its
   * connection cut) and resolves once the key is held that way. The adapter's lease must be short
   * (a few hundred ms) and the waiters' wait limit much longer. Absent for an adapter whose locks
   * die with their process (nothing can outlive the holder): that check is skipped.
   */
  abandon?: (key: string) => Promise<void>;
  /**
   * A lock service over the same namespace whose lease is short (a few hundred ms), for the check
   * that a live holder keeps its lock past the lease. Absent when `abandon` is absent.
   */
  shortLease?: () => Promise<LockService>;
}

/** Options of {@link describeLockServiceConformance}. */
export interface LockServiceConformanceOptions {
  name: string;
  /** A fresh lock service (and its peers) over a fresh namespace; called once per test. */
  create: () => Promise<LockServiceTestContext>;
  /** Frees what `create` made (connections, servers). */
  cleanup?: (context: LockServiceTestContext) => Promise<void>;
}

/** A promise with its resolver, for holding a lock until the test lets go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A few turns of the event loop and a timer, so that a task that should not start could. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Runs `count` tasks of one key at once, each yielding several times; answers the most that ran together. */
async function overlapOf(services: readonly LockService[], key: string, count: number): Promise<number> {
  let running = 0;
  let most = 0;
  const ran: number[] = [];
  await Promise.all(
    Array.from({ length: count }, (_, index) =>
      services[index % services.length]!.withLock(key, async () => {
        running += 1;
        most = Math.max(most, running);
        await settle();
        await Promise.resolve();
        await settle();
        ran.push(index);
        running -= 1;
      }),
    ),
  );
  expect(
    [...ran].sort((a, b) => a - b),
    "every task ran exactly once",
  ).toEqual(Array.from({ length: count }, (_, index) => index));
  return most;
}

/**
 * The behaviour every LockService must show (see the port's TSDoc): tasks of one key never overlap,
 * in one process or across processes sharing the backend (`peer`); tasks of different keys run
 * at once; the lock is released when the task settles, resolved, rejected or thrown synchronously,
 * and the task's result or error passes through unchanged; a waiter past the wait limit rejects
 * with `STORAGE_UNAVAILABLE` and its task never runs (`impatient`); a dead holder's lock frees
 * itself after the lease (`abandon`), while a live holder keeps it past the lease (`shortLease`).
 */
export function describeLockServiceConformance(options: LockServiceConformanceOptions): void {
  describe(`LockService conformance: ${options.name}`, () => {
    /** Runs `body` on a fresh context and cleans up after it, also when it fails. */
    const withContext =
      (body: (context: LockServiceTestContext, test: TestContext) => Promise<void>) =>
      async (test: TestContext) => {
        const context = await options.create();
        try {
          await body(context, test);
        } finally {
          await options.cleanup?.(context);
        }
      };

    describeExclusion(withContext);
    describeRelease(withContext);
    describeLimits(withContext);
  });
}

type WithContext = (
  body: (context: LockServiceTestContext, test: TestContext) => Promise<void>,
) => (test: TestContext) => Promise<void>;

function describeExclusion(withContext: WithContext): void {
  describe("exclusion", () => {
    it(
      "runs concurrent tasks of one key one at a time, each exactly once",
      withContext(async ({ locks }) => {
        expect(await overlapOf([locks], "image_one", 12)).toBe(1);
      }),
    );

    it(
      "runs tasks of different keys at the same time",
      withContext(async ({ locks }) => {
        const held = gate();
        const first = locks.withLock("image_a", () => held.promise);
        // The second key's task runs while the first key is still held; were keys not independent
        // it would wait for `held`, which only opens after it ran.
        let secondRan = false;
        await locks.withLock("image_b", async () => {
          secondRan = true;
        });
        expect(secondRan).toBe(true);
        held.open();
        await first;
      }),
    );

    it(
      "keeps keys apart that share a prefix or contain separators",
      withContext(async ({ locks }) => {
        const keys = ["img", "img2", "img:2", "img}2", "img{2}", "ímg", "a b"];
        const gates = keys.map(() => gate());
        const started: string[] = [];
        const held = keys.map((key, index) =>
          locks.withLock(key, async () => {
            started.push(key);
            await gates[index]!.promise;
          }),
        );
        await waitUntil(() => started.length === keys.length, "every key's task started");
        expect([...started].sort()).toEqual([...keys].sort());
        for (const { open } of gates) open();
        await Promise.all(held);
      }),
    );

    it(
      "excludes tasks of one key across processes sharing the backend",
      withContext(async ({ locks, peer }, test) => {
        if (peer === undefined) test.skip("a lock service of one process has no peer");
        const other = await peer!();
        expect(await overlapOf([locks, other], "image_shared", 10)).toBe(1);
      }),
    );

    it(
      "lets a peer take a key as soon as its holder released it",
      withContext(async ({ locks, peer }, test) => {
        if (peer === undefined) test.skip("a lock service of one process has no peer");
        const other = await peer!();
        const order: string[] = [];
        const held = gate();
        const first = locks.withLock("image_handover", async () => {
          order.push("first start");
          await held.promise;
          order.push("first end");
        });
        await waitUntil(() => order.length === 1, "the first holder started");
        const second = other.withLock("image_handover", async () => {
          order.push("second");
        });
        await settle();
        expect(order, "the peer waits while the key is held").toEqual(["first start"]);
        held.open();
        await Promise.all([first, second]);
        expect(order).toEqual(["first start", "first end", "second"]);
      }),
    );
  });
}

function describeRelease(withContext: WithContext): void {
  describe("release and pass-through", () => {
    it(
      "passes the task's result through and releases the key",
      withContext(async ({ locks }) => {
        const value = { answer: 42 };
        await expect(locks.withLock("image_r", async () => value)).resolves.toBe(value);
        await expect(locks.withLock("image_r", async () => "again")).resolves.toBe("again");
      }),
    );

    it(
      "passes the task's error through unchanged and releases the key",
      withContext(async ({ locks }) => {
        const error = new Error("task failed");
        await expect(
          locks.withLock("image_e", async () => {
            throw error;
          }),
        ).rejects.toBe(error);
        await expect(locks.withLock("image_e", async () => "after the error")).resolves.toBe(
          "after the error",
        );
      }),
    );

    it(
      "releases the key when the task throws before returning a promise",
      withContext(async ({ locks }) => {
        const error = new Error("thrown synchronously");
        const task = (): Promise<never> => {
          throw error;
        };
        await expect(locks.withLock("image_s", task)).rejects.toBe(error);
        await expect(locks.withLock("image_s", async () => "free")).resolves.toBe("free");
      }),
    );

    it(
      "lets waiters run after a holder that failed, and a failing waiter does not stop the next",
      withContext(async ({ locks }) => {
        const order: string[] = [];
        const held = gate();
        const failing = locks.withLock("image_f", async () => {
          order.push("holder");
          await held.promise;
          throw new Error("holder failed");
        });
        const waiters = [1, 2, 3].map((index) =>
          locks.withLock("image_f", async () => {
            order.push(`waiter ${index}`);
            if (index === 2) throw new Error("waiter failed");
            return index;
          }),
        );
        held.open();
        const settled = await Promise.allSettled([failing, ...waiters]);
        expect(settled.map((outcome) => outcome.status)).toEqual([
          "rejected",
          "fulfilled",
          "rejected",
          "fulfilled",
        ]);
        expect(order[0]).toBe("holder");
        expect([...order.slice(1)].sort()).toEqual(["waiter 1", "waiter 2", "waiter 3"]);
      }),
    );
  });
}

function describeLimits(withContext: WithContext): void {
  describe("wait limit and lease", () => {
    it(
      "rejects a waiter past its wait limit with STORAGE_UNAVAILABLE, without running its task",
      withContext(async ({ locks, impatient }, test) => {
        if (impatient === undefined) test.skip("this lock service has no wait limit");
        const waiter = await impatient!();
        const held = gate();
        const holder = locks.withLock("image_busy", () => held.promise);
        await settle();
        let ran = false;
        const error = await waiter
          .withLock("image_busy", async () => {
            ran = true;
          })
          .catch((caught: unknown) => caught);
        expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.STORAGE_UNAVAILABLE);
        expect(ran, "the refused waiter's task never runs").toBe(false);
        held.open();
        await holder;
        await expect(waiter.withLock("image_busy", async () => "free again")).resolves.toBe("free again");
      }),
    );

    it(
      "frees the key of a holder that died, after the lease",
      withContext(async ({ locks, abandon }, test) => {
        if (abandon === undefined) test.skip("this lock service's locks die with their process");
        await abandon!("image_dead");
        // The waiter's wait limit is far longer than the lease: it gets the key, not a 503.
        await expect(locks.withLock("image_dead", async () => "taken over")).resolves.toBe("taken over");
      }),
    );

    it(
      "keeps the key of a live holder whose task runs longer than the lease",
      withContext(async ({ shortLease, peer }, test) => {
        if (shortLease === undefined || peer === undefined) {
          test.skip("this lock service has no lease (its locks die with their process)");
        }
        const holder = await shortLease!();
        const other = await peer!();
        const order: string[] = [];
        const held = gate();
        const first = holder.withLock("image_long", async () => {
          order.push("first start");
          await held.promise;
          order.push("first end");
        });
        await waitUntil(() => order.length === 1, "the long holder started");
        const second = other.withLock("image_long", async () => {
          order.push("second");
        });
        // Several leases pass while the holder is alive; the peer must still be waiting.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(order, "the peer waits while a live holder runs past its lease").toEqual(["first start"]);
        held.open();
        await Promise.all([first, second]);
        expect(order).toEqual(["first start", "first end", "second"]);
      }),
    );
  });
}
