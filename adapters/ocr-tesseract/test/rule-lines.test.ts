import { describe, expect, it } from "vitest";
import { eraseRules, findRuleLines, findRules, type RuleOptions } from "../src/rules.js";
import { mixedPage, reference, stripedPage } from "./rules-reference.js";
import { seeded } from "./seeded.js";

/** The first index where `a` and `b` differ, -1 if none (`toEqual` on big byte arrays is slow). */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  return a.findIndex((value, index) => value !== b[index]);
}

/** Odd sizes, sizes not a multiple of 4 or 8, lines of 1 px, and a few larger pages. */
const SIZES: [number, number][] = [
  [1, 1],
  [1, 57],
  [57, 1],
  [2, 3],
  [7, 45],
  [45, 7],
  [63, 63],
  [97, 130],
  [130, 97],
  [255, 41],
  [41, 255],
  [321, 203],
];

/** Minimum lengths around the probe stride's corner cases (1 px, 2 px, fractional, none). */
const MIN_LENGTHS = [-1, 0, 1, 1.5, 2, 3, 4, 5, 7.2, 12, 13, 20, 40, 41, 100, 1000, Number.NaN, Infinity];

describe("findRuleLines: the probing scan finds exactly the straightforward scan's runs", () => {
  it("lays every run of striped random pages bare, as the reference scan finds them", () => {
    const random = seeded(20241126);
    let runsCompared = 0;
    for (const [width, height] of SIZES)
      for (const horizontal of [true, false])
        for (const minLength of MIN_LENGTHS) {
          const grey = stripedPage(width, height, horizontal, random);
          const direction = horizontal ? "horizontal" : "vertical";
          // The thickness rule drops runs shorter than 12 px (12 times their 1 px).
          const expected = reference
            .referenceRuns(grey, width, height, horizontal, minLength)
            .filter((run) => run.to - run.from + 1 >= 12)
            .map(({ line, from, to }) => ({ at: line, from, to, thickness: 1 }));
          expect(findRuleLines(grey, width, height, direction, { minLength, maxThickness: 1 })).toEqual(
            expected,
          );
          runsCompared += expected.length;
        }
    // Not vacuous: thousands of runs were compared one by one.
    expect(runsCompared).toBeGreaterThan(2000);
  });

  it("gives the reference's rules in both directions, and erases the same pixels, on mixed random pages", () => {
    const random = seeded(7);
    let rulesCompared = 0;
    for (let round = 0; round < 4; round += 1)
      for (const [width, height] of SIZES) {
        const grey = mixedPage(width, height, random);
        const before = grey.slice();
        const options: RuleOptions[] = [
          {},
          { lineHeight: 3 },
          { lineHeight: Number.NaN },
          { maxThickness: 1000 },
          ...MIN_LENGTHS.map((minLength) => ({ minLength, maxThickness: 1000 })),
          ...MIN_LENGTHS.map((minLength) => ({ minLength })),
        ];
        for (const option of options) {
          const rules = {
            horizontal: findRuleLines(grey, width, height, "horizontal", option),
            vertical: findRuleLines(grey, width, height, "vertical", option),
          };
          const expected = {
            horizontal: reference.referenceFindRuleLines(grey, width, height, "horizontal", option),
            vertical: reference.referenceFindRuleLines(grey, width, height, "vertical", option),
          };
          expect(rules).toEqual(expected);
          expect(findRules(grey, width, height, option)).toEqual(expected);
          rulesCompared += expected.horizontal.length + expected.vertical.length;

          const erased = grey.slice();
          eraseRules(erased, width, height, rules);
          const referenceErased = grey.slice();
          reference.referenceEraseRules(referenceErased, width, height, expected);
          expect(firstDifference(erased, referenceErased)).toBe(-1);
        }
        // The scans only read the page.
        expect(firstDifference(grey, before)).toBe(-1);
      }
    expect(rulesCompared).toBeGreaterThan(1000);
  });
});
