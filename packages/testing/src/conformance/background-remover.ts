import type { BackgroundRemover } from "@pixport/core";
import { afterAll, beforeAll, describe } from "vitest";
import { EASY_BACKGROUND_FIXTURES, type MaskFixture } from "../fixtures/background.js";
import {
  concurrencyTests,
  describeErrors,
  describeOutput,
  describeQuality,
  describeSizes,
  orientationTests,
  transparencyTests,
} from "./background-remover-groups.js";

/** Options of {@link describeBackgroundRemoverConformance}. */
export interface BackgroundRemoverConformanceOptions {
  /** Suite title, e.g. the adapter name. */
  name: string;
  /** Builds the remover under test, once per suite (a model adapter loads its model here). */
  create: () => BackgroundRemover | Promise<BackgroundRemover>;
  /** Releases what `create` made (a model session); called once after the suite. */
  cleanup?: (remover: BackgroundRemover) => void | Promise<void>;
  /**
   * Quality bar: the smallest accepted mean IoU (thresholded alpha vs the known mask) over the
   * easy fixtures (`EASY_BACKGROUND_FIXTURES`). @default 0.9
   */
  minMeanIoU?: number;
  /**
   * Largest per-channel difference between a subject pixel of the decoded input and the same
   * pixel of the cut-out where it is opaque (a different decoder may round differently).
   * @default 8
   */
  colourTolerance?: number;
  /** Timeout of each test and of `create`, ms. @default 60_000 */
  timeoutMs?: number;
  /** Adapter-specific tests registered inside the suite; `remover()` returns the created remover. */
  extraTests?: (remover: () => BackgroundRemover) => void;
}

/** Largest alpha accepted at a known background point ("0 or near"). */
/** What the suite's test groups share: the remover, the shared cut-outs and the thresholds. */
export interface RemoverSuite {
  /** The remover under test (only while the suite runs). */
  remover: () => BackgroundRemover;
  /** The cut-out of an easy fixture rendered as JPEG, computed once and shared. */
  cutoutOf: (fixture: MaskFixture) => Promise<{ input: Uint8Array; output: Uint8Array }>;
  /** The first easy fixture. */
  first: MaskFixture;
  minMeanIoU: number;
  colourTolerance: number;
  /** Per-test timeout, ms. */
  timeout: number;
  options: BackgroundRemoverConformanceOptions;
}

/**
 * The BackgroundRemover conformance suite: the semantics of the port's TSDoc (an RGBA PNG of exactly
 * the request's size, alpha 0 on the background and 255 on the subject, never a hang, pixport errors)
 * on generated product shots with known masks (`fixtures/background.ts`), plus the quality bar: the
 * mean IoU over the easy fixtures (logged per fixture).
 *
 * It makes 17 `remove()` calls in all, 4 of which must reject early, so it suits a slow model too.
 *
 * @example
 * ```ts
 * describeBackgroundRemoverConformance({ name: "sharp", create: () => createSharpBackgroundRemover() });
 * ```
 */
export function describeBackgroundRemoverConformance(options: BackgroundRemoverConformanceOptions): void {
  const minMeanIoU = options.minMeanIoU ?? 0.9;
  const colourTolerance = options.colourTolerance ?? 8;
  const timeout = options.timeoutMs ?? 60_000;

  describe(`BackgroundRemover conformance: ${options.name}`, () => {
    let created: BackgroundRemover | undefined;
    const remover = (): BackgroundRemover => {
      if (created === undefined) throw new Error("The remover exists only while the suite runs.");
      return created;
    };
    beforeAll(async () => {
      created = await options.create();
    }, timeout);
    afterAll(async () => {
      if (created !== undefined) await options.cleanup?.(created);
      created = undefined;
    }, timeout);

    // One call per easy fixture (as JPEG), shared by the tests that read it: the suite stays cheap
    // for removers that take a second per call. Each entry is the input and its cut-out.
    const cutouts = new Map<MaskFixture, Promise<{ input: Uint8Array; output: Uint8Array }>>();
    const cutoutOf = (fixture: MaskFixture) => {
      let entry = cutouts.get(fixture);
      if (entry === undefined) {
        entry = (async () => {
          const input = await fixture.render("jpeg");
          const output = await remover().remove({
            image: input,
            width: fixture.width,
            height: fixture.height,
          });
          return { input, output };
        })();
        entry.catch(() => {}); // the test that awaits it reports the failure
        cutouts.set(fixture, entry);
      }
      return entry;
    };
    const first = EASY_BACKGROUND_FIXTURES[0]!;
    const suite: RemoverSuite = { remover, cutoutOf, first, minMeanIoU, colourTolerance, timeout, options };

    describeOutput(suite);
    describeQuality(suite);
    transparencyTests(suite);
    orientationTests(suite);
    describeErrors(suite);
    describeSizes(suite);
    concurrencyTests(suite);

    options.extraTests?.(remover);
  });
}
