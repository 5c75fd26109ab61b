/** The colour group of the ImageCodec suite: blur and modulate, measured on decoded pixels. */
import type { ModulateStep, Rgba, TransformStep } from "@pixport/core/adapter-kit";
import { describe, expect } from "vitest";
import {
  Colors,
  decodeRaw,
  edgeContrast,
  halvesImage,
  hue,
  hueDistance,
  luminanceStats,
  meanOf,
  meanSaturation,
  solidImage,
} from "../fixtures/images.js";
import type { CodecHarness } from "./image-codec-harness.js";

const modulate = (fields: Partial<Omit<ModulateStep, "type">>): TransformStep => ({
  type: "modulate",
  brightness: 0,
  saturation: 0,
  exposure: 0,
  contrast: 0,
  lightness: 0,
  hue: 0,
  ...fields,
});
const patch = (color: Rgba) => solidImage(16, 16, color, "png");
const muted = { r: 150, g: 100, b: 90, alpha: 1 };

export function describeBlur(h: CodecHarness): void {
  const { check, run } = h;
  describe("blur", () => {
    check(
      "blur",
      "lowers edge contrast, more with a larger sigma, keeping size and mean",
      async () => {
        const input = await halvesImage(40, 20, Colors.black, Colors.white);
        const original = await decodeRaw(input);
        const light = await run(input, [{ type: "blur", sigma: 1 }]);
        const heavy = await run(input, [{ type: "blur", sigma: 5 }]);
        expect([heavy.image.width, heavy.image.height]).toEqual([40, 20]);
        const before = edgeContrast(original);
        expect(before).toBeGreaterThan(200);
        expect(edgeContrast(light.image)).toBeLessThan(before * 0.8);
        expect(edgeContrast(heavy.image)).toBeLessThan(edgeContrast(light.image));
        expect(Math.abs(luminanceStats(heavy.image).mean - luminanceStats(original).mean)).toBeLessThan(12);
      },
      ["blur"],
    );
  });
}

export function describeModulate(h: CodecHarness): void {
  describe("modulate", () => {
    modulateLevels(h);
    modulateChannels(h);
  });
}

function modulateLevels(h: CodecHarness): void {
  const { check, run, expectColor } = h;
  check(
    "modulate",
    "all fields 0 leaves the pixels unchanged",
    async () => {
      const { image } = await run(await patch(muted), [modulate({})]);
      expectColor(image, 8, 8, muted, 3);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "brightness moves mean luminance up and down",
    async () => {
      const input = await patch(muted);
      const base = luminanceStats(await decodeRaw(input)).mean;
      const up = luminanceStats((await run(input, [modulate({ brightness: 50 })])).image).mean;
      const down = luminanceStats((await run(input, [modulate({ brightness: -50 })])).image).mean;
      expect(up).toBeGreaterThan(base + 10);
      expect(down).toBeLessThan(base - 10);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "saturation moves mean saturation up and down",
    async () => {
      const input = await patch(muted);
      const base = meanSaturation(await decodeRaw(input));
      const up = meanSaturation((await run(input, [modulate({ saturation: 50 })])).image);
      const down = meanSaturation((await run(input, [modulate({ saturation: -50 })])).image);
      expect(up).toBeGreaterThan(base + 0.05);
      expect(down).toBeLessThan(base - 0.05);
      const grey = meanSaturation((await run(input, [modulate({ saturation: -100 })])).image);
      expect(grey).toBeLessThan(0.05);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "hue rotates a red patch's hue, in opposite directions for opposite signs",
    async () => {
      const red = { r: 200, g: 40, b: 40, alpha: 1 };
      const input = await patch(red);
      const forward = hue(meanOf((await run(input, [modulate({ hue: 120 })])).image));
      const backward = hue(meanOf((await run(input, [modulate({ hue: -120 })])).image));
      expect(hueDistance(forward, hue(red))).toBeGreaterThan(60);
      expect(hueDistance(backward, hue(red))).toBeGreaterThan(60);
      expect(hueDistance(forward, backward)).toBeGreaterThan(60);
    },
    ["modulate"],
  );
}

function modulateChannels(h: CodecHarness): void {
  const { check, run } = h;
  check(
    "modulate",
    "lightness adds to luminance",
    async () => {
      const input = await patch(muted);
      const base = luminanceStats(await decodeRaw(input)).mean;
      const up = luminanceStats((await run(input, [modulate({ lightness: 20 })])).image).mean;
      const down = luminanceStats((await run(input, [modulate({ lightness: -20 })])).image).mean;
      expect(up).toBeGreaterThan(base + 10);
      expect(down).toBeLessThan(base - 10);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "exposure is a linear gain of 1 + v/100 on RGB",
    async () => {
      const input = await patch({ r: 100, g: 80, b: 60, alpha: 1 });
      const up = meanOf((await run(input, [modulate({ exposure: 50 })])).image);
      expect(up.r).toBeGreaterThan(150 - 12);
      expect(up.r).toBeLessThan(150 + 12);
      expect(up.b).toBeGreaterThan(90 - 12);
      expect(up.b).toBeLessThan(90 + 12);
      const down = meanOf((await run(input, [modulate({ exposure: -50 })])).image);
      expect(down.r).toBeGreaterThan(50 - 12);
      expect(down.r).toBeLessThan(50 + 12);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "contrast moves the spread of luminance around mid-grey",
    async () => {
      const dark = { r: 100, g: 100, b: 100, alpha: 1 };
      const light = { r: 156, g: 156, b: 156, alpha: 1 };
      const input = await halvesImage(16, 16, dark, light, "png");
      const base = luminanceStats(await decodeRaw(input));
      const up = luminanceStats((await run(input, [modulate({ contrast: 50 })])).image);
      const down = luminanceStats((await run(input, [modulate({ contrast: -50 })])).image);
      expect(up.stddev).toBeGreaterThan(base.stddev * 1.3);
      expect(down.stddev).toBeLessThan(base.stddev * 0.7);
      expect(Math.abs(up.mean - base.mean)).toBeLessThan(8);
    },
    ["modulate"],
  );

  check(
    "modulate",
    "leaves alpha untouched",
    async () => {
      const input = await patch({ ...muted, alpha: 0.5 });
      const { image } = await run(input, [modulate({ brightness: 50, contrast: 30, exposure: 20, hue: 90 })]);
      expect(Math.abs(meanOf(image).a - 128)).toBeLessThanOrEqual(2);
    },
    ["modulate"],
  );
}
