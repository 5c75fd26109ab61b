import { ssim } from "ssim.js";
import { describe, expect, it } from "vitest";
import type { PixelData } from "../src/auto-quality.js";
import { meanSsim, ssimReference, ssimScale } from "../src/ssim.js";

/** A seeded pseudo-random generator (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A picture with smooth gradients, edges and noise (SSIM has something to measure), RGBA. */
function picture(width: number, height: number, seed: number): PixelData {
  const next = random(seed);
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const at = (y * width + x) * 4;
      const edge = (x * 7 + y * 3) % 97 < 40 ? 60 : 0;
      data[at] = (x * 255) / width + edge * 0.5 + next() * 20;
      data[at + 1] = (y * 255) / height + next() * 20;
      data[at + 2] = ((x + y) % 64) * 3 + edge;
      data[at + 3] = 255;
    }
  }
  return { data, width, height, channels: 4 };
}

/** `pixels` with each channel moved by up to `amount` at random (a lossy encode's kind of error). */
function distorted(pixels: PixelData, amount: number, seed: number): PixelData {
  const next = random(seed);
  const data = Uint8Array.from(pixels.data, (value, index) =>
    index % 4 === 3 ? value : Math.max(0, Math.min(255, value + Math.round((next() - 0.5) * 2 * amount))),
  );
  return { ...pixels, data };
}

const asImageData = (pixels: PixelData) => ({
  data: new Uint8ClampedArray(pixels.data.buffer, pixels.data.byteOffset, pixels.data.byteLength),
  width: pixels.width,
  height: pixels.height,
});

describe("meanSsim", () => {
  // Sizes that give scales 1 to 4, odd and even, with partial windows and boxes at the edges.
  const sizes = [
    [120, 90],
    [300, 200],
    [517, 383],
    [640, 427],
    [800, 799],
    [1001, 1030],
  ] as const;

  it("is ssim.js's bezkrovny mean SSIM with its default downsampling", () => {
    for (const [index, [width, height]] of sizes.entries()) {
      const reference = picture(width, height, index + 1);
      for (const amount of [2, 12, 40]) {
        const candidate = distorted(reference, amount, index * 10 + amount);
        const expected = ssim(asImageData(reference), asImageData(candidate), { ssim: "bezkrovny" }).mssim;
        const measured = meanSsim(ssimReference(reference), candidate);
        expect(measured, `${width}x${height} at ${amount}`).toBeCloseTo(expected, 9);
      }
    }
  });

  it("measures at a given scale as ssim.js does with the matching maxSize", () => {
    const reference = picture(400, 300, 7);
    const candidate = distorted(reference, 20, 8);
    for (const scale of [1, 2, 3]) {
      const expected = ssim(asImageData(reference), asImageData(candidate), {
        ssim: "bezkrovny",
        maxSize: scale === 1 ? Number.MAX_SAFE_INTEGER : 300 / scale,
      }).mssim;
      expect(meanSsim(ssimReference(reference, scale), candidate), `scale ${scale}`).toBeCloseTo(expected, 9);
    }
  });

  it("reads grey pixels, with or without alpha, as the same luma as their RGB copy", () => {
    const colour = picture(200, 150, 3);
    const grey = (channels: 1 | 2): PixelData => {
      const data = new Uint8Array(200 * 150 * channels);
      for (let index = 0; index < 200 * 150; index += 1) {
        data[index * channels] = colour.data[index * 4]!;
        if (channels === 2) data[index * 2 + 1] = 255;
      }
      return { data, width: 200, height: 150, channels };
    };
    const asRgba = (pixels: PixelData): PixelData => {
      const data = new Uint8Array(200 * 150 * 4);
      for (let index = 0; index < 200 * 150; index += 1) {
        data.fill(pixels.data[index * pixels.channels]!, index * 4, index * 4 + 3);
        data[index * 4 + 3] = 255;
      }
      return { data, width: 200, height: 150, channels: 4 };
    };
    const reference = grey(1);
    const candidate = distorted(asRgba(reference), 15, 4);
    const expected = meanSsim(ssimReference(asRgba(reference)), candidate);
    expect(meanSsim(ssimReference(reference), candidate)).toBeCloseTo(expected, 12);
    expect(meanSsim(ssimReference(grey(2)), candidate)).toBeCloseTo(expected, 12);
    expect(expected).toBeLessThan(1);
  });

  it("is 1 for identical pixels and falls as the error grows", () => {
    const reference = picture(320, 240, 5);
    const prepared = ssimReference(reference);
    expect(meanSsim(prepared, reference)).toBeCloseTo(1, 12);
    const scores = [4, 16, 64].map((amount) => meanSsim(prepared, distorted(reference, amount, amount)));
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(scores[1]).toBeGreaterThan(scores[2]!);
  });

  it("refuses pixels of another size than the reference's", () => {
    const prepared = ssimReference(picture(100, 80, 1));
    expect(() => meanSsim(prepared, picture(100, 79, 1))).toThrow(RangeError);
  });

  it("scales by the shorter side over 256, rounded", () => {
    expect(ssimScale({ width: 640, height: 383 })).toBe(1);
    expect(ssimScale({ width: 640, height: 384 })).toBe(2);
    expect(ssimScale({ width: 200, height: 10_000 })).toBe(1);
    expect(ssimScale({ width: 2000, height: 1000 })).toBe(4);
  });
});
