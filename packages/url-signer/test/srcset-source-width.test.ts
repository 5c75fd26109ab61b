import { describe, expect, it } from "vitest";
import { srcset } from "../src/index.js";

const ID = "image_abcdefghijklmnopqrstuvwx";
const base = { base: "https://img.test", secret: "s3cret-0123456789", imageId: ID };
const widthsOf = (set: string) => set.split(", ").map((entry) => entry.slice(entry.lastIndexOf(" ") + 1));

describe("srcset with the source's width", () => {
  it("lists no width above the source; the source's own width stands for the ones above", async () => {
    const set = await srcset({ ...base, widths: [320, 640, 1280, 1920], sourceWidth: 800 });
    expect(widthsOf(set)).toEqual(["320w", "640w", "800w"]);
    expect(set).toMatch(/\/w_800\.auto 800w$/);
    expect(set).not.toMatch(/w_1280|w_1920/);
  });

  it("keeps every width at or below the source, and all of them without sourceWidth", async () => {
    expect(widthsOf(await srcset({ ...base, widths: [320, 800], sourceWidth: 800 }))).toEqual([
      "320w",
      "800w",
    ]);
    expect(widthsOf(await srcset({ ...base, widths: [320, 1280] }))).toEqual(["320w", "1280w"]);
    expect(widthsOf(await srcset({ ...base, widths: [1280, 1920], sourceWidth: 600 }))).toEqual(["600w"]);
  });

  it("keeps the wider widths when the modifiers ask for enlarge_1", async () => {
    const set = await srcset({ ...base, widths: [320, 1280], sourceWidth: 800, modifiers: ["enlarge_1"] });
    expect(widthsOf(set)).toEqual(["320w", "1280w"]);
  });

  it("refuses a sourceWidth that is not a positive integer", async () => {
    await expect(srcset({ ...base, widths: [320], sourceWidth: 0 })).rejects.toThrow(TypeError);
    await expect(srcset({ ...base, widths: [320], sourceWidth: 12.5 })).rejects.toThrow(TypeError);
  });
});
