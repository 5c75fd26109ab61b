import { describe, expect, it } from "vitest";
import { createReaderPool, type PageReader } from "../src/reader-pool.js";

/** Readers that read nothing, numbered in the order they were started, with their terminations. */
function fakeReaders() {
  const started: number[] = [];
  const terminated: number[] = [];
  let failNext = false;
  const start = async (): Promise<PageReader> => {
    if (failNext) {
      failNext = false;
      throw new Error("start failed");
    }
    const id = started.length + 1;
    started.push(id);
    return Object.assign(
      {
        readPage: async () => [],
        readBlock: async () => [],
        terminate: async () => {
          terminated.push(id);
        },
      },
      { id },
    );
  };
  const idOf = (reader: PageReader) => (reader as PageReader & { id: number }).id;
  return { start, started, terminated, idOf, failStart: () => (failNext = true) };
}

/** Lets the pool's promise chains settle (no timer involved). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("the reader pool", () => {
  it("starts readers lazily, at most size of them, and reuses an idle one", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(2, readers.start);
    expect(readers.started).toEqual([]);
    const first = await pool.acquire();
    const second = await pool.acquire();
    expect(readers.started).toEqual([1, 2]);
    pool.release(first);
    expect(readers.idOf(await pool.acquire())).toBe(1);
    expect(readers.started).toEqual([1, 2]);
    pool.release(second);
    await pool.close();
  });

  it("hands a reader given back to the calls waiting, first in, first out", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(1, readers.start);
    const only = await pool.acquire();
    const order: string[] = [];
    const waiting = ["a", "b", "c"].map((name) =>
      pool.acquire().then((reader) => {
        order.push(name);
        return reader;
      }),
    );
    await settle();
    expect(order).toEqual([]);
    pool.release(only);
    const a = await waiting[0]!;
    expect(readers.idOf(a)).toBe(1);
    pool.release(a);
    pool.release(await waiting[1]!);
    await waiting[2];
    expect(order).toEqual(["a", "b", "c"]);
    expect(readers.started).toEqual([1]);
    await pool.close();
  });

  it("terminates a discarded reader and starts a fresh one for the next waiting call", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(1, readers.start);
    const broken = await pool.acquire();
    const next = pool.acquire();
    pool.discard(broken);
    expect(readers.idOf(await next)).toBe(2);
    expect(readers.terminated).toEqual([1]);
    await pool.close();
  });

  it("withdraws a waiting call whose signal aborts: it rejects with the reason and takes no reader", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(1, readers.start);
    const only = await pool.acquire();
    const giveUp = new AbortController();
    const withdrawn = pool.acquire(giveUp.signal);
    const after = pool.acquire();
    giveUp.abort(new Error("deadline"));
    await expect(withdrawn).rejects.toThrow("deadline");
    pool.release(only);
    // The reader goes to the call behind the withdrawn one, not to the call that gave up.
    expect(readers.idOf(await after)).toBe(1);
    await pool.close();
  });

  it("frees the slot of a reader that failed to start: the call rejects, the next call starts one", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(1, readers.start);
    readers.failStart();
    await expect(pool.acquire()).rejects.toThrow("start failed");
    expect(readers.idOf(await pool.acquire())).toBe(1);
    await pool.close();
  });

  it("on close terminates idle and busy readers, and one given back later again rather than keeping it", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(2, readers.start);
    const inUse = await pool.acquire();
    pool.release(await pool.acquire());
    await pool.close();
    expect([...readers.terminated].sort()).toEqual([1, 2]);
    pool.release(inUse);
    await settle();
    expect(readers.terminated.filter((id) => id === readers.idOf(inUse))).toHaveLength(2);
    await expect(pool.acquire()).rejects.toMatchObject({ code: "MODEL_BAD_RESPONSE" });
    expect(readers.started).toEqual([1, 2]);
  });

  it("on close refuses the calls waiting for a reader", async () => {
    const readers = fakeReaders();
    const pool = createReaderPool(1, readers.start);
    await pool.acquire();
    const waiting = pool.acquire();
    await pool.close();
    await expect(waiting).rejects.toMatchObject({ code: "MODEL_BAD_RESPONSE" });
  });
});
