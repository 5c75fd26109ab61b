import { afterEach, describe, expect, it, vi } from "vitest";
import { type Release, Semaphore } from "../src/adapter-kit.js";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

/** Lets pending promise callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

afterEach(() => {
  vi.useRealTimers();
});

describe("Semaphore", () => {
  it("grants up to the capacity at once, then waiters first in, first out as units come back", async () => {
    const slots = new Semaphore({ capacity: 2 });
    const first = await slots.acquire();
    const second = await slots.acquire();
    const order: number[] = [];
    const third = slots.acquire().then((release) => {
      order.push(3);
      return release;
    });
    const fourth = slots.acquire().then((release) => {
      order.push(4);
      return release;
    });
    await settle();
    expect(order).toEqual([]);
    expect(slots.held).toBe(2);
    expect(slots.waiting).toBe(2);
    second();
    second(); // a second call gives nothing back again
    await settle();
    expect(order).toEqual([3]);
    first();
    await settle();
    expect(order).toEqual([3, 4]);
    (await third)();
    (await fourth)();
    expect(slots.held).toBe(0);
  });

  it("weighs acquisitions by units; a later small one does not overtake a large one waiting", async () => {
    const bytes = new Semaphore({ capacity: 10 });
    const six = await bytes.acquire({ units: 6 });
    let largeGranted = false;
    let smallGranted = false;
    const large = bytes.acquire({ units: 8 }).then((release) => {
      largeGranted = true;
      return release;
    });
    const small = bytes.acquire({ units: 2 }).then((release) => {
      smallGranted = true;
      return release;
    });
    await settle();
    expect([largeGranted, smallGranted]).toEqual([false, false]);
    six();
    await settle();
    expect([largeGranted, smallGranted]).toEqual([true, true]);
    expect(bytes.held).toBe(10);
    (await large)();
    (await small)();
  });

  it("refuses units over the capacity with a RangeError, and past maxWaiting with full()", async () => {
    const slots = new Semaphore({ capacity: 1, maxWaiting: 1, full: () => new Error("full") });
    expect(await rejection(slots.acquire({ units: 2 }))).toBeInstanceOf(RangeError);
    const held = await slots.acquire();
    expect(slots.isFull()).toBe(false);
    const waiter = slots.acquire();
    expect(slots.isFull()).toBe(true);
    expect(((await rejection(slots.acquire())) as Error).message).toBe("full");
    held();
    (await waiter)();
  });

  it("a waiter leaves after maxWaitMs with timedOut(), and the ones behind it move up", async () => {
    vi.useFakeTimers();
    const bytes = new Semaphore({ capacity: 10, maxWaitMs: 1000, timedOut: () => new Error("timed out") });
    const held = await bytes.acquire({ units: 5 });
    const large = rejection(bytes.acquire({ units: 8 }));
    await vi.advanceTimersByTimeAsync(500);
    let smallGranted = false;
    const small = bytes.acquire({ units: 3 }).then((release) => {
      smallGranted = true;
      return release;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(smallGranted).toBe(false);
    await vi.advanceTimersByTimeAsync(500);
    expect(((await large) as Error).message).toBe("timed out");
    expect(smallGranted).toBe(true);
    expect(bytes.waiting).toBe(0);
    held();
    (await small)();
  });

  it("a waiter whose signal aborts leaves with its reason; an aborted signal is refused at once when it would wait", async () => {
    const slots = new Semaphore({ capacity: 1 });
    const held = await slots.acquire();
    const controller = new AbortController();
    const waiting = rejection(slots.acquire({ signal: controller.signal }));
    controller.abort(new Error("gave up"));
    expect(((await waiting) as Error).message).toBe("gave up");
    expect(slots.waiting).toBe(0);
    expect(((await rejection(slots.acquire({ signal: controller.signal }))) as Error).message).toBe(
      "gave up",
    );
    held();
    // Free units are granted even to an aborted signal's acquisition (nothing to withdraw).
    (await slots.acquire({ signal: controller.signal }))();
  });

  it("tryAcquire and canAcquire never wait: null while others wait or the units do not fit", async () => {
    const slots = new Semaphore({ capacity: 2 });
    const one = slots.tryAcquire();
    expect(one).not.toBeNull();
    expect(slots.canAcquire(2)).toBe(false);
    expect(slots.tryAcquire(2)).toBeNull();
    const big = slots.acquire({ units: 2 });
    // One unit is free, but a waiter is ahead.
    expect(slots.canAcquire(1)).toBe(false);
    expect(slots.tryAcquire(1)).toBeNull();
    one!();
    (await big)();
    expect(slots.held).toBe(0);
  });

  it("caps each key's share; a waiter at its key's share does not hold up other keys", async () => {
    const uploads = new Semaphore({ capacity: 3, maxPerKey: 1 });
    const acme = await uploads.acquire({ key: "acme" });
    expect(uploads.heldBy("acme")).toBe(1);
    expect(uploads.canAcquire(1, "acme")).toBe(false);
    expect(uploads.tryAcquire(1, "acme")).toBeNull();
    let acmeGranted = false;
    const acmeAgain = uploads.acquire({ key: "acme" }).then((release) => {
      acmeGranted = true;
      return release;
    });
    await settle();
    expect(acmeGranted).toBe(false);
    // Behind acme's waiter, another key and a keyless acquisition are granted at once.
    const globex = uploads.tryAcquire(1, "globex");
    expect(globex).not.toBeNull();
    const anonymous = await uploads.acquire();
    expect(uploads.held).toBe(3);
    acme();
    await settle();
    // acme's unit went to acme's waiter (the capacity was full too).
    expect(acmeGranted).toBe(true);
    expect(uploads.heldBy("acme")).toBe(1);
    (await acmeAgain)();
    globex!();
    anonymous();
    expect(uploads.heldBy("acme")).toBe(0);
    expect(uploads.held).toBe(0);
  });

  it("run holds the units for the task and gives them back when it fails too", async () => {
    const slots = new Semaphore({ capacity: 1 });
    await expect(slots.run(async () => slots.held)).resolves.toBe(1);
    await expect(
      slots.run(async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(slots.held).toBe(0);
  });

  it("close refuses the waiters and every later acquisition; held units are released as usual", async () => {
    const slots = new Semaphore({ capacity: 1 });
    const held: Release = await slots.acquire();
    const waiting = rejection(slots.acquire());
    slots.close(() => new Error("closed"));
    expect(((await waiting) as Error).message).toBe("closed");
    expect(((await rejection(slots.acquire())) as Error).message).toBe("closed");
    held();
    expect(slots.held).toBe(0);
    expect(slots.tryAcquire()).toBeNull();
  });
});
