import type { ImageRepository } from "@pixport/core";
import { afterEach, beforeEach, describe } from "vitest";
import { describeList, describeListCreatedBefore } from "./image-repository-lists.js";
import {
  describeCopies,
  describeDelete,
  describeInsertAndGet,
  describeOtherProcesses,
  describeUpdate,
} from "./image-repository-writes.js";

export { conformanceImageId, conformanceImageRecord } from "./image-repository-records.js";

/** The live repository of the running test, for {@link ImageRepositoryConformanceOptions.extraTests}. */
export interface ImageRepositoryTestContext {
  /** The repository created for the current test (read it inside `it`). */
  readonly repository: ImageRepository;
}

/** Options of {@link describeImageRepositoryConformance}. */
export interface ImageRepositoryConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Creates a fresh, empty repository; called before every test. */
  create: () => ImageRepository | Promise<ImageRepository>;
  /** Releases what `create` made; called after every test. */
  cleanup?: (repository: ImageRepository) => void | Promise<void>;
  /**
   * Opens a second, independent instance on the same backend as `repository`, standing in for
   * another process. Absent for process-local repositories such as the memory adapter, which skips
   * the cross-instance tests: there is no other process to share with.
   */
  peer?: (repository: ImageRepository) => ImageRepository | Promise<ImageRepository>;
  /** Adapter-specific tests that run inside the suite with the same fresh repository per test. */
  extraTests?: (context: ImageRepositoryTestContext) => void;
}

/**
 * Runs the ImageRepository conformance suite: every semantic stated in the `ImageRepository` port
 * TSDoc (insert/get/update/delete, owner scoping, total order, inclusive cursors, page walks in
 * both directions, retention queries) plus copy-in/copy-out of records. Each test gets a fresh
 * repository from `create`.
 *
 * @example
 * ```ts
 * describeImageRepositoryConformance({ name: "memory", create: () => createMemoryImageRepository() });
 * ```
 */
export function describeImageRepositoryConformance(options: ImageRepositoryConformanceOptions): void {
  describe(`ImageRepository conformance: ${options.name}`, () => {
    let current: ImageRepository | undefined;
    const context: ImageRepositoryTestContext = {
      get repository() {
        if (current === undefined) throw new Error("The repository exists only while a test runs.");
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

    describeInsertAndGet(context);
    describeUpdate(context);
    describeDelete(context);
    describeList(context);
    describeListCreatedBefore(context);
    describeCopies(context);
    describeOtherProcesses(context, options);
    options.extraTests?.(context);
  });
}
