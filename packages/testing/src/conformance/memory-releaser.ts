import type { MemoryReleaser } from "@pixport/core";
import { describe, expect, it } from "vitest";

/** Options of {@link describeMemoryReleaserConformance}. */
export interface MemoryReleaserConformanceOptions {
  name: string;
  /** A fresh releaser; called once per test. */
  create: () => MemoryReleaser;
  /** The allocators this releaser may report in this process (e.g. `["glibc", "tcmalloc"]`). */
  allocators: readonly string[];
}

/**
 * The behaviour every MemoryReleaser must show (see the port's TSDoc): it names its allocator;
 * `release()` resolves (to nothing) and never rejects, called once, again and again, and many
 * times at once (calls during a release share it); it works for as long as the process lives.
 * Whether memory really goes back is the adapter's own test (it needs a process whose allocator
 * holds freed memory, see `@pixport/allocator`).
 */
export function describeMemoryReleaserConformance(options: MemoryReleaserConformanceOptions): void {
  describe(`MemoryReleaser conformance: ${options.name}`, () => {
    it("names an allocator this process may run on", () => {
      const releaser = options.create();
      expect(typeof releaser.allocator).toBe("string");
      expect(options.allocators).toContain(releaser.allocator);
    });

    it("resolves every release, one after another and many at once, and never rejects", async () => {
      const releaser = options.create();
      await expect(releaser.release()).resolves.toBeUndefined();
      await expect(releaser.release()).resolves.toBeUndefined();
      const burst = Array.from({ length: 8 }, () => releaser.release());
      await expect(Promise.all(burst)).resolves.toEqual(Array.from({ length: 8 }, () => undefined));
      // Still working after the burst.
      await expect(releaser.release()).resolves.toBeUndefined();
    });

    it("keeps its allocator across releases", async () => {
      const releaser = options.create();
      const before = releaser.allocator;
      await releaser.release();
      expect(releaser.allocator).toBe(before);
    });
  });
}
