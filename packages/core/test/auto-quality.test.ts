import { describe, expect, it } from "vitest";
import {
  type AutoQualityTarget,
  correctedQuality,
  encodeAtAutoQuality,
  type PixelData,
  qualityProbe,
  searchQuality,
} from "../src/adapter-kit.js";
import { createImagePipeline, type ImageCodec, type TransformRequest } from "../src/index.js";
import { AUTO_QUALITY_TARGETS } from "../src/operations/quality-levels.js";
import { parseTokens } from "../src/operations/variant-url.js";
import { meanSsim, ssimReference } from "../src/ssim.js";
import { fake, live, sizeOf } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

const target: AutoQualityTarget = { ssim: 0.98, min: 20, max: 95 };
/** A smooth SSIM curve that reaches 0.98 at quality `at`. */
const curve = (at: number) => (quality: number) => 1 - 0.02 * Math.exp((at - quality) / 15);

describe("searchQuality", () => {
  it("finds a passing quality within a few steps of the lowest, in at most the probes it is given", async () => {
    for (const at of [40, 47, 57, 64, 71, 83, 90]) {
      const ssim = curve(at);
      const asked: number[] = [];
      const { quality, points } = await searchQuality(target, 64, async (q) => {
        asked.push(q);
        return ssim(q);
      });
      expect(asked.length, `${at}: ${asked.join(",")}`).toBeLessThanOrEqual(3);
      expect(points.map((point) => point.quality)).toEqual(asked);
      expect(ssim(quality), `${at}: ${quality}`).toBeGreaterThanOrEqual(target.ssim);
      expect(quality - at, `${at}: ${asked.join(",")} -> ${quality}`).toBeLessThanOrEqual(5);
      // A fourth probe never answers worse.
      const four = await searchQuality(target, 64, async (q) => ssim(q), 4);
      expect(four.quality).toBeLessThanOrEqual(quality);
      expect(ssim(four.quality)).toBeGreaterThanOrEqual(target.ssim);
    }
  });

  it("reaches far from its start, passing", async () => {
    const ssim = curve(24);
    const { quality } = await searchQuality(target, 64, async (q) => ssim(q));
    expect(ssim(quality)).toBeGreaterThanOrEqual(target.ssim);
    expect(quality).toBeLessThan(45);
  });

  it("never answers a quality measured to fail, and the highest of the range when none passed", async () => {
    const { quality } = await searchQuality(target, 64, async () => 0.5);
    expect(quality).toBe(95);
    // Not monotone: 70 passes, 80 fails; the answer is a measured pass.
    const bumpy = await searchQuality(target, 70, async (q) => (q === 70 || q >= 90 ? 0.99 : 0.9));
    expect(bumpy.points.find((point) => point.quality === bumpy.quality)?.ssim ?? 0.99).toBeGreaterThan(0.98);
  });

  it("keeps to the range, starting inside it", async () => {
    const asked: number[] = [];
    await searchQuality({ ssim: 0.9, min: 30, max: 60 }, 80, async (q) => {
      asked.push(q);
      return 0.95;
    });
    expect(asked[0]).toBe(60);
    for (const q of asked) expect(q >= 30 && q <= 60).toBe(true);
  });
});

describe("correctedQuality", () => {
  const points = [
    { quality: 64, ssim: 0.985 },
    { quality: 52, ssim: 0.978 },
    { quality: 58, ssim: 0.982 },
  ];
  it("keeps a quality whose whole output passed", () => {
    expect(correctedQuality(target, points, 58, 0.981)).toBe(58);
  });

  it("moves to where the probe's curve, shifted by the output's shortfall, meets the target", () => {
    // The output measured 0.003 under its probe: the probe must reach 0.983, aimed at 0.984, which
    // the chord from 58 (0.982) to 64 (0.985) reaches at 62.
    expect(correctedQuality(target, points, 58, 0.979)).toBe(62);
    // Reaching the measured point above takes that point.
    expect(correctedQuality(target, points, 58, 0.977)).toBe(64);
    // The chord starts at the highest measured point under the one that passes.
    const more = [...points, { quality: 61, ssim: 0.9825 }];
    expect(correctedQuality(target, more, 58, 0.979)).toBe(63);
    // Beyond every measured point: extrapolated along the last slope (0.0005 per step), capped.
    expect(correctedQuality(target, points, 64, 0.978)).toBe(68);
    expect(correctedQuality(target, points, 64, 0.9)).toBe(95);
  });
});

describe("qualityProbe", () => {
  const raw = (width: number, height: number) => {
    const data = new Uint8Array(width * height);
    for (let y = 0; y < height; y += 1)
      for (let x = 0; x < width; x += 1) data[y * width + x] = (x * 7 + y) % 256;
    return { data, width, height, channels: 1 };
  };

  it("is the output itself up to 16,384 px", () => {
    const small = raw(128, 128);
    expect(qualityProbe(small)).toBe(small);
    const over = qualityProbe(raw(129, 128));
    expect(over.width * over.height).toBeLessThan(129 * 128);
  });

  it("takes four tiles of a larger output at its scale: about an eighth of its pixels, sides in 16s", () => {
    const large = raw(640, 480);
    const probe = qualityProbe(large);
    expect(probe.width % 32).toBe(0);
    expect(probe.height % 32).toBe(0);
    expect(probe.width * probe.height).toBeLessThanOrEqual((640 * 480) / 8);
    expect(probe.width * probe.height).toBeGreaterThan((640 * 480) / 12);
    // The top-left tile is centred in the top-left quadrant: its first pixel is the output's.
    const tileWidth = probe.width / 2;
    const tileHeight = probe.height / 2;
    const left = Math.floor(160 - tileWidth / 2);
    const top = Math.floor(120 - tileHeight / 2);
    expect(probe.data[0]).toBe(large.data[top * 640 + left]);
    // The bottom-right tile starts in the bottom-right quadrant.
    const right = Math.floor(480 - tileWidth / 2);
    const bottom = Math.floor(360 - tileHeight / 2);
    expect(probe.data[tileHeight * probe.width + tileWidth]).toBe(large.data[bottom * 640 + right]);
  });
});

describe("encodeAtAutoQuality", () => {
  /** Smooth pixels with detail: a gradient crossed by stripes, RGB. */
  const picture = (width: number, height: number): PixelData => {
    const data = new Uint8Array(width * height * 3);
    for (let index = 0; index < width * height; index += 1) {
      const x = index % width;
      const y = Math.floor(index / width);
      data.fill(((x + y) % 200) + ((x * 13) % 40 < 20 ? 40 : 0), index * 3, index * 3 + 3);
    }
    return { data, width, height, channels: 3 };
  };
  /** An "encoder" whose error shrinks as the quality grows: every pixel moved by a fixed pattern. */
  const noisy = (pixels: PixelData, quality: number): PixelData => ({
    ...pixels,
    data: Uint8Array.from(pixels.data, (value, index) => {
      // A hash of the position: noise without a pattern that the probe's tiles would cut apart.
      const noise = ((Math.imul(index ^ (index >>> 7), 0x9e3779b1) >>> 0) / 2 ** 32) * 2 - 1;
      const amount = Math.round(((100 - quality) / 2) * noise);
      return Math.max(0, Math.min(255, value + amount));
    }),
  });

  for (const [width, height] of [
    [120, 100],
    [640, 480],
  ] as const) {
    it(`answers a quality whose whole output keeps the target, in at most five encodes (${width}x${height})`, async () => {
      const pixels = picture(width, height);
      const encoded: { size: number; quality: number }[] = [];
      const wanted: AutoQualityTarget = { ssim: 0.985, min: 20, max: 95 };
      const { encoded: answer, quality } = await encodeAtAutoQuality(pixels, wanted, 80, {
        async encode(from, quality) {
          encoded.push({ size: from.width * from.height, quality });
          return noisy(from, quality);
        },
        shown: async (from) => from,
        decoded: async (from) => from,
      });
      expect(encoded.length).toBeLessThanOrEqual(5);
      expect(answer.width * answer.height).toBe(width * height);
      expect(meanSsim(ssimReference(pixels), answer)).toBeGreaterThanOrEqual(wanted.ssim);
      // The answer is an encode of the whole output; searched whole, it is within a few steps of the
      // lowest passing quality (a probe's correction may step further, to a measured point).
      expect(encoded.filter((one) => one.size === width * height).map((one) => one.quality)).toContain(
        quality,
      );
      const lowest = [...Array(76).keys()]
        .map((step) => 20 + step)
        .find((q) => meanSsim(ssimReference(pixels), noisy(pixels, q)) >= wanted.ssim);
      expect(lowest).toBeDefined();
      if (qualityProbe(pixels) === pixels)
        expect(quality - lowest!, JSON.stringify(encoded)).toBeLessThanOrEqual(5);
      // Only an output over the probe's size is searched on a smaller probe.
      const searched = encoded.filter((one) => one.size < width * height).length;
      expect(searched > 0).toBe(width * height > 16_384);
    });
  }
});

describe("q_auto in variant URLs", () => {
  it("parses q_auto (good) and its levels, and refuses others with the token named", () => {
    expect(parseTokens(["q_auto"], {}).autoQuality).toBe("good");
    expect(parseTokens(["q_auto:best"], {}).autoQuality).toBe("best");
    expect(parseTokens(["q_auto:eco"], {}).autoQuality).toBe("eco");
    expect(() => parseTokens(["q_auto:max"], {})).toThrow(/q_auto:\{level\}/);
    expect(() => parseTokens(["q_80", "q_auto"], {})).toThrow(/repeats q_/);
  });

  it("orders its levels' targets: eco below good below best, per format", () => {
    for (const format of ["jpeg", "webp", "avif"] as const) {
      expect(AUTO_QUALITY_TARGETS.eco[format]!).toBeLessThan(AUTO_QUALITY_TARGETS.good[format]!);
      expect(AUTO_QUALITY_TARGETS.good[format]!).toBeLessThan(AUTO_QUALITY_TARGETS.best[format]!);
    }
  });
});

/** A codec that chooses WebP's and AVIF's quality (not JPEG's) and records what it is asked. */
function autoCodec() {
  const calls: TransformRequest[] = [];
  const codec: ImageCodec = {
    name: "fake",
    capabilities: {
      inputFormats: ["png"],
      outputFormats: ["png", "jpeg", "webp", "avif"],
      steps: ["resize"],
      autoQuality: ["webp", "avif"],
    },
    probe: async (input) => ({ format: "png", ...sizeOf(input) }),
    transform: async (request) => {
      calls.push(request);
      return { data: request.input, format: request.output.format, ...sizeOf(request.input) };
    },
  };
  return { codec, calls };
}

describe("q_auto through delivery and convert", () => {
  it("asks the codec for the level's target where it can choose, the default quality elsewhere", async () => {
    const { codec, calls } = autoCodec();
    const pipeline = createImagePipeline(memoryDeps(codec), { delivery: { allowUnsigned: true } });
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(400, 300) });
    await pipeline.publishImage(live, { imageId: image.id });
    const last = () => calls.at(-1)!.output;
    await pipeline.deliverVariant({ imageId: image.id, file: "q_auto,w_200.webp", signature: "_" });
    expect(last()).toMatchObject({ format: "webp", quality: 82 });
    expect(last().autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.good.webp);
    await pipeline.deliverVariant({ imageId: image.id, file: "q_auto:eco,w_200.avif", signature: "_" });
    expect(last().autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.eco.avif);
    await pipeline.deliverVariant({ imageId: image.id, file: "q_auto,w_200.jpg", signature: "_" });
    expect(last()).toMatchObject({ format: "jpeg", quality: 80 });
    expect(last().autoQuality).toBeUndefined();
    // Cached like any variant: the same URL again does not reach the codec; a fixed q_ is another variant.
    const made = calls.length;
    const again = await pipeline.deliverVariant({
      imageId: image.id,
      file: "q_auto,w_200.webp",
      signature: "_",
    });
    expect(again.cache).toBe("HIT");
    expect(calls.length).toBe(made);
    const fixed = await pipeline.deliverVariant({
      imageId: image.id,
      file: "q_82,w_200.webp",
      signature: "_",
    });
    expect(fixed.cache).toBe("MISS");
    expect(last().autoQuality).toBeUndefined();
  });

  it("composes with auto: every candidate format carries its own target", async () => {
    const { codec, calls } = autoCodec();
    const pipeline = createImagePipeline(memoryDeps(codec), { delivery: { allowUnsigned: true } });
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(400, 300) });
    await pipeline.publishImage(live, { imageId: image.id });
    const before = calls.length;
    await pipeline.deliverVariant({
      imageId: image.id,
      file: "q_auto:best,w_200.auto",
      signature: "_",
      accept: "image/avif,image/webp",
    });
    // (The fake codec answers its input, so the PNG fallback is tried after them.)
    const outputs = calls.slice(before, before + 2).map((call) => call.output);
    expect(outputs.map((output) => [output.format, output.autoQuality?.ssim])).toEqual([
      ["avif", AUTO_QUALITY_TARGETS.best.avif],
      ["webp", AUTO_QUALITY_TARGETS.best.webp],
    ]);
  });

  it('takes quality "auto" in convert (the good level), and 1..100 as before', async () => {
    const { codec, calls } = autoCodec();
    const pipeline = createImagePipeline(memoryDeps(codec));
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(40, 30) });
    await pipeline.convertImage(live, { imageId: image.id, body: { format: "webp", quality: "auto" } });
    expect(calls.at(-1)!.output.autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.good.webp);
    await pipeline.convertImage(live, { imageId: image.id, body: { format: "webp", quality: 70 } });
    expect(calls.at(-1)!.output).toMatchObject({ quality: 70 });
    expect(calls.at(-1)!.output.autoQuality).toBeUndefined();
    const refused = (await pipeline
      .convertImage(live, { imageId: image.id, body: { format: "webp", quality: "best" as never } })
      .then(
        () => ({ issues: "converted" }),
        (error: unknown) => error as { issues: unknown },
      )) as { issues: unknown };
    expect(refused.issues).toEqual([{ path: "quality", message: "must be an integer between 1 and 100" }]);
  });
});
