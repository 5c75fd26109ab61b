import { describe, expect, it } from "vitest";
import { LruMap } from "../src/adapter-kit.js";

describe("LruMap", () => {
  it("evicts the least recently used entry past maxEntries; get counts as a use, peek and has do not", () => {
    const evicted: string[] = [];
    const lru = new LruMap<string, number>({ maxEntries: 3, onEvict: (key) => evicted.push(key) });
    lru.set("a", 1).set("b", 2).set("c", 3);
    expect(lru.get("a")).toBe(1);
    expect(lru.peek("b")).toBe(2);
    expect(lru.has("b")).toBe(true);
    lru.set("d", 4);
    expect(evicted).toEqual(["b"]);
    expect([...lru.keys()]).toEqual(["c", "a", "d"]);
    expect(lru.get("b")).toBeUndefined();
  });

  it("keeps the order exact when the most recent key is asked again, deleted, evicted or cleared", () => {
    // Compared step by step with a plain reference list: least recently used first.
    const reference: string[] = [];
    const use = (key: string) => {
      const at = reference.indexOf(key);
      if (at >= 0) reference.splice(at, 1);
      reference.push(key);
    };
    const lru = new LruMap<string, number>({ maxEntries: 3, sizeOf: (value) => value, maxBytes: 100 });
    const steps: Array<() => void> = [
      () => {
        lru.set("a", 1);
        use("a");
      },
      () => {
        lru.set("b", 1);
        use("b");
      },
      () => {
        lru.get("b");
        use("b");
      },
      () => {
        lru.get("b");
        use("b");
      },
      () => {
        lru.get("a");
        use("a");
      },
      () => {
        lru.delete("a");
        reference.splice(reference.indexOf("a"), 1);
      },
      () => {
        lru.get("b");
        use("b");
      },
      () => {
        lru.set("c", 1);
        use("c");
      },
      () => {
        lru.set("d", 1);
        use("d");
      },
      () => {
        lru.get("b");
        use("b");
      },
      () => {
        lru.set("e", 1);
        use("e");
        reference.shift();
      },
      // A replace that pushes out the most recent key (d): later uses must still reorder.
      () => {
        lru.get("d");
        use("d");
      },
      () => {
        lru.replace("b", 100);
        reference.splice(0, reference.length, "b");
      },
      () => {
        lru.set("g", 0);
        use("g");
      },
      () => {
        lru.get("b");
        use("b");
      },
      () => {
        lru.clear();
        reference.length = 0;
      },
      () => {
        lru.set("f", 1);
        use("f");
      },
      () => {
        lru.get("f");
        use("f");
      },
    ];
    for (const step of steps) {
      step();
      expect([...lru.keys()]).toEqual(reference);
    }
  });

  it("bounds the sum of sizeOf, evicting as many entries as needed, oldest first", () => {
    const evicted: Array<[string, string]> = [];
    const lru = new LruMap<string, string>({
      maxBytes: 10,
      sizeOf: (value) => value.length,
      onEvict: (key, value) => evicted.push([key, value]),
    });
    lru.set("a", "xxxx").set("b", "xxx").set("c", "xx");
    expect(lru.bytes).toBe(9);
    lru.set("d", "xxxxxxx");
    expect(evicted).toEqual([
      ["a", "xxxx"],
      ["b", "xxx"],
    ]);
    expect(lru.bytes).toBe(9);
    expect([...lru.entries()]).toEqual([
      ["c", "xx"],
      ["d", "xxxxxxx"],
    ]);
  });

  it("setting a kept key replaces its value and cost and makes it the most recent", () => {
    const lru = new LruMap<string, string>({ maxBytes: 100, sizeOf: (value) => value.length });
    lru.set("a", "1234").set("b", "12");
    lru.set("a", "1");
    expect(lru.bytes).toBe(3);
    expect([...lru.keys()]).toEqual(["b", "a"]);
    expect(lru.size).toBe(2);
  });

  it("never evicts the entry just set, even one over maxBytes, until the next set", () => {
    const evicted: string[] = [];
    const lru = new LruMap<string, number>({
      maxBytes: 10,
      sizeOf: (n) => n,
      onEvict: (key) => evicted.push(key),
    });
    lru.set("small", 2).set("huge", 50);
    expect(evicted).toEqual(["small"]);
    expect(lru.peek("huge")).toBe(50);
    lru.set("next", 1);
    expect(evicted).toEqual(["small", "huge"]);
    expect(lru.bytes).toBe(1);
  });

  it("replace changes a value and its cost without moving it, and only for a kept key", () => {
    const lru = new LruMap<string, number>({ maxBytes: 10, sizeOf: (n) => n });
    lru.set("a", 1).set("b", 1).set("c", 1);
    expect(lru.replace("a", 3)).toBe(true);
    expect(lru.replace("missing", 3)).toBe(false);
    expect([...lru.keys()]).toEqual(["a", "b", "c"]);
    expect(lru.bytes).toBe(5);
    expect(lru.replace("c", 9)).toBe(true);
    // Over the bound: the oldest others go, the replaced entry stays in its place.
    expect([...lru.entries()]).toEqual([
      ["b", 1],
      ["c", 9],
    ]);
    expect(lru.bytes).toBe(10);
  });

  it("delete and clear remove without calling onEvict and keep the byte count right", () => {
    const evicted: string[] = [];
    const lru = new LruMap<string, number>({
      maxBytes: 100,
      sizeOf: (n) => n,
      onEvict: (key) => evicted.push(key),
    });
    lru.set("a", 5).set("b", 7);
    expect(lru.delete("a")).toBe(true);
    expect(lru.delete("a")).toBe(false);
    expect(lru.bytes).toBe(7);
    lru.clear();
    expect(lru.size).toBe(0);
    expect(lru.bytes).toBe(0);
    expect(evicted).toEqual([]);
  });

  it("iterates least recent first, values and entries alike", () => {
    const lru = new LruMap<number, string>();
    lru.set(1, "one").set(2, "two").set(3, "three");
    lru.get(1);
    expect([...lru.values()]).toEqual(["two", "three", "one"]);
    expect([...lru]).toEqual([
      [2, "two"],
      [3, "three"],
      [1, "one"],
    ]);
  });
});
