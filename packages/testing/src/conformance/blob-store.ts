import type { BlobStore } from "@pixport/core";
import { afterEach, beforeEach, describe } from "vitest";
import {
  describeAbsence,
  describeConcurrency,
  describeCopies,
  describeKeyValidation,
  describeListing,
  describeOtherProcesses,
  describeRoundTrip,
  describeStat,
} from "./blob-store-groups.js";

export { INVALID_BLOB_KEYS } from "./blob-store-groups.js";

/** What a BlobStore adapter declares about itself; gaps skip the matching tests. */
export interface BlobStoreConformanceCapabilities {
  /**
   * Whether one key may be both a blob and the folder of other keys (`a` and `a/b` at once).
   * Object stores can; a filesystem cannot, because `a` is either a file or a directory.
   * @default true
   */
  keyAsPrefix?: boolean;
  /**
   * Whether racing puts of one key always leave the complete bytes and the metadata of one of
   * them. Real backends do (an S3 PUT is atomic, the fs store serialises puts per key); a test
   * double may not (s3rver writes the object file in place and its metadata file separately, so
   * racing PUTs can interleave bytes, or pair one PUT's bytes with another's content type). When
   * `false`, the race test requires that every racing put resolves and that the next put of the
   * key reads back whole, which is all the adapter itself controls.
   * @default true
   */
  atomicPuts?: boolean;
  /**
   * The store implements the optional `list` (needed by the orphan sweep). Stores without it are
   * not swept; set `false` to skip its test.
   * @default true
   */
  list?: boolean;
}

/** The live store of the running test, for {@link BlobStoreConformanceOptions.extraTests}. */
export interface BlobStoreTestContext {
  /** The store created for the current test (read it inside `it`, not while declaring tests). */
  readonly store: BlobStore;
}

/** Options of {@link describeBlobStoreConformance}. */
export interface BlobStoreConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Creates a fresh, empty store; called before every test. */
  create: () => BlobStore | Promise<BlobStore>;
  /** Releases what `create` made (temp directories, buckets); called after every test. */
  cleanup?: (store: BlobStore) => void | Promise<void>;
  capabilities?: BlobStoreConformanceCapabilities;
  /**
   * Opens a second, independent instance on the same backend as `store`, standing in for another
   * process (same root, same bucket). Absent for process-local stores such as the memory adapter,
   * which skips the cross-instance tests: there is no other process to share with.
   */
  peer?: (store: BlobStore) => BlobStore | Promise<BlobStore>;
  /** Adapter-specific tests that run inside the suite with the same fresh store per test. */
  extraTests?: (context: BlobStoreTestContext) => void;
}

/**
 * Runs the BlobStore conformance suite: every semantic stated in the `BlobStore` port TSDoc, plus
 * copy-in/copy-out of bytes and key validation. Each test gets a fresh store from `create`.
 *
 * @example
 * ```ts
 * describeBlobStoreConformance({ name: "memory", create: () => createMemoryBlobStore() });
 * ```
 */
export function describeBlobStoreConformance(options: BlobStoreConformanceOptions): void {
  const capabilities = { keyAsPrefix: true, list: true, ...options.capabilities };
  describe(`BlobStore conformance: ${options.name}`, () => {
    let current: BlobStore | undefined;
    const context: BlobStoreTestContext = {
      get store() {
        if (current === undefined) throw new Error("The store exists only while a test runs.");
        return current;
      },
    };

    beforeEach(async () => {
      current = await options.create();
    });
    afterEach(async () => {
      if (current !== undefined) await options.cleanup?.(current);
      current = undefined;
    });

    describeListing(context, capabilities);
    describeRoundTrip(context);
    describeStat(context);
    describeAbsence(context);
    describeKeyValidation(context);
    describeCopies(context);
    describeConcurrency(context, capabilities);
    describeOtherProcesses(context, options);

    options.extraTests?.(context);
  });
}
