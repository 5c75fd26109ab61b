import { describe, expect, it } from "vitest";
import { moveRules } from "../src/rules.js";

describe("moveRules", () => {
  it("moves horizontal rules' rows by dy and their extent by dx, vertical rules the other way round", () => {
    const rules = {
      horizontal: [{ at: 100, from: 20, to: 300, thickness: 2 }],
      vertical: [{ at: 50, from: 90, to: 400, thickness: 3 }],
    };
    expect(moveRules(rules, -10, -40)).toEqual({
      horizontal: [{ at: 60, from: 10, to: 290, thickness: 2 }],
      vertical: [{ at: 40, from: 50, to: 360, thickness: 3 }],
    });
    expect(moveRules(rules, 0, 0)).toEqual(rules);
  });
});
