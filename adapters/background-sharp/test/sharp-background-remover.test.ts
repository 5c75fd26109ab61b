import {
  alphaMaskIoU,
  backgroundFixture,
  decodeAlpha,
  EASY_BACKGROUND_FIXTURES,
  type MaskFixture,
} from "@pixport/testing";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { computeMask, createSharpBackgroundRemover } from "../src/index.js";

// Shared behaviour (format, size, colours, alpha input, orientation, errors, mean IoU) is in the
// conformance suite (sharp-background-remover.conformance.test.ts); these are sharp-specific.

const remover = createSharpBackgroundRemover();

async function cutOut(fixture: MaskFixture) {
  const png = await remover.remove({
    image: await fixture.render(),
    width: fixture.width,
    height: fixture.height,
  });
  const { alpha, width } = await decodeAlpha(png);
  return { png, alphaAt: (x: number, y: number) => alpha[y * width + x]! };
}

/** Share of the fixture's background pixels whose alpha is at least 128 (kept as subject). */
async function backgroundKept(png: Uint8Array, fixture: MaskFixture): Promise<number> {
  const { alpha } = await decodeAlpha(png);
  const mask = fixture.mask();
  let background = 0;
  let kept = 0;
  for (let index = 0; index < mask.length; index += 1) {
    if (mask[index] === 1) continue;
    background += 1;
    if (alpha[index]! >= 128) kept += 1;
  }
  return kept / background;
}

describe("createSharpBackgroundRemover", () => {
  for (const fixture of EASY_BACKGROUND_FIXTURES) {
    // Stricter than the suite's mean: every easy fixture on its own, and the border band.
    it(`cuts out the subject with IoU >= 0.9 and a transparent border: ${fixture.name}`, async () => {
      const { png, alphaAt } = await cutOut(fixture);
      for (const [x, y] of [
        [2, 2],
        [fixture.width - 3, 2],
        [2, fixture.height - 3],
        [fixture.width - 3, fixture.height - 3],
        [fixture.width / 2, 3],
      ] as const) {
        expect(alphaAt(x, y), `alpha at ${x},${y}`).toBeLessThanOrEqual(5);
      }
      expect(await alphaMaskIoU(png, fixture)).toBeGreaterThanOrEqual(0.9);
    });
  }

  it("keeps the subject's centre and top opaque", async () => {
    const { alphaAt } = await cutOut(EASY_BACKGROUND_FIXTURES[0]!);
    expect(alphaAt(160, 120)).toBeGreaterThanOrEqual(250);
    expect(alphaAt(160, 60)).toBeGreaterThanOrEqual(250);
  });

  it("answers (without hanging) on a busy background, keeping the size", async () => {
    // Busy backgrounds are the documented failure case: only size, format and termination are checked.
    const raw = Buffer.alloc(320 * 240 * 3);
    for (let index = 0; index < raw.length; index += 1) raw[index] = (index * 7919) % 251;
    const image = await sharp(raw, { raw: { width: 320, height: 240, channels: 3 } })
      .png()
      .toBuffer();
    const png = await remover.remove({ image, width: 320, height: 240 });
    const meta = await sharp(png).metadata();
    expect(meta.format).toBe("png");
    expect([meta.width, meta.height]).toEqual([320, 240]);
  });

  it("says which size it expected when the bytes do not match", async () => {
    const fixture = EASY_BACKGROUND_FIXTURES[1]!;
    await expect(remover.remove({ image: await fixture.render(), width: 321, height: 240 })).rejects.toThrow(
      /320 x 240, expected 321 x 240/,
    );
  });

  // The hard fixtures document the known failure modes (README, "Offline image intelligence").
  // Bands are measured on sharp 0.35 / libvips (IoU in the comments); if the algorithm improves,
  // these fail: update the bands and the README together.
  describe("documented weaknesses (hard fixtures)", () => {
    it("keeps the enclosed hole of a ring opaque (measured IoU 0.729)", async () => {
      const fixture = backgroundFixture("yellow ring on light grey (a hole)");
      const { png, alphaAt } = await cutOut(fixture);
      // The hole is background not connected to the border: the flood fill never reaches it.
      expect(alphaAt(160, 120), "alpha at the centre of the hole").toBeGreaterThanOrEqual(250);
      // The outer background and the ring itself are right.
      expect(alphaAt(20, 20)).toBeLessThanOrEqual(5);
      expect(alphaAt(160 + 67, 120), "alpha on the ring").toBe(255);
      // Ring 19,085 px, hole 6,362 px: the best IoU with the hole kept is 0.75.
      const iou = await alphaMaskIoU(png, fixture);
      expect(iou).toBeGreaterThan(0.7);
      expect(iou).toBeLessThan(0.76);
    });

    it("computeMask marks the ring's hole as subject (why the hole stays opaque)", async () => {
      const fixture = backgroundFixture("yellow ring on light grey (a hole)");
      const { mask } = computeMask(fixture.rgb(), fixture.width, fixture.height);
      expect(mask[120 * fixture.width + 160], "the hole's centre").toBe(1);
      expect(mask[20 * fixture.width + 20], "the outer background").toBe(0);
    });

    it("keeps the table of a two-tone background as subject (measured IoU 0.32)", async () => {
      const fixture = backgroundFixture("red vase on a two-tone wall and table");
      const { png, alphaAt } = await cutOut(fixture);
      // One smooth colour surface cannot follow a step between two colours: the model follows the
      // wall (most of the border) and the brown table below y = 150 stays opaque, although it
      // touches the border.
      expect(alphaAt(20, 20), "the wall").toBeLessThanOrEqual(5);
      expect(alphaAt(20, 220), "the table").toBeGreaterThanOrEqual(250);
      expect(await backgroundKept(png, fixture), "share of the background kept").toBeGreaterThan(0.3);
      expect(await alphaMaskIoU(png, fixture)).toBeLessThan(0.5);
    });

    it("keeps most of a striped background (measured IoU 0.22)", async () => {
      const fixture = backgroundFixture("white plate on diagonal stripes");
      const { png } = await cutOut(fixture);
      // No smooth colour surface fits alternating red and blue stripes: the background stays.
      expect(await backgroundKept(png, fixture), "share of the background kept").toBeGreaterThan(0.8);
      expect(await alphaMaskIoU(png, fixture)).toBeLessThan(0.4);
    });

    it("cuts out a low-contrast disc thanks to its rim (measured IoU 0.978): not a weakness", async () => {
      // The 4 px grey rim stops the flood fill, and the pale inside is not connected to the border,
      // so this hard fixture passes; it guards the rim-closing morphology.
      const fixture = backgroundFixture("pale disc with a grey rim on white (low contrast)");
      const { png, alphaAt } = await cutOut(fixture);
      expect(alphaAt(160, 120)).toBe(255);
      expect(alphaAt(20, 20)).toBeLessThanOrEqual(5);
      expect(await alphaMaskIoU(png, fixture)).toBeGreaterThanOrEqual(0.95);
    });
  });
});
