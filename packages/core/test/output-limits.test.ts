import { describe, expect, it } from "vitest";
import { createImagePipeline, DEFAULT_LIMITS, type ImageFormat } from "../src/index.js";
import { outputPixelsIssue } from "../src/limits.js";
import {
  AUTO_QUALITY_BYTES_PER_PIXEL,
  ENCODER_BYTES_PER_PIXEL,
  estimateJobBytes,
} from "../src/policies/memory-budget.js";
import { fake, fakeCodec, live, refusal } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

// The memory estimate covers each format's encoder, and the per-format output limits refuse an
// output (AVIF above all) that the encoder could not make within the deadline and the budget,
// before anything is decoded or encoded.

const MB = 1024 * 1024;
const black = { r: 0, g: 0, b: 0, alpha: 1 };

/** A codec that reads fake PNGs, writes every format, and records each transform it is asked for. */
const recordingCodec = () => fakeCodec(["resize", "rotate"]);

describe("the memory estimate of a job's encoder", () => {
  it("covers what a 45 degree rotation of 50 megapixels to AVIF was measured to peak at (3.27 GB)", () => {
    const source = { width: 7071, height: 7071 };
    const steps = [{ type: "rotate" as const, angle: 45, background: black }];
    const measuredPeak = 3.27e9;
    // Decode and passes alone (no format): what the estimate was before the encoders counted.
    const passes = estimateJobBytes(source, steps);
    expect(passes).toBeLessThan(measuredPeak);
    expect(estimateJobBytes(source, steps, 1, "avif")).toBeGreaterThanOrEqual(measuredPeak);
    // So the default 1 GiB budget refuses it (a 422) before any decode, whatever the output limits.
    expect(estimateJobBytes(source, steps, 1, "avif")).toBeGreaterThan(1024 * MB);
  });

  it("orders the encoders by their working set and scales it with the output's pixels and frames", () => {
    const order: ImageFormat[] = ["jpeg", "png", "webp", "gif", "avif"];
    const sizes = order.map((format) => ENCODER_BYTES_PER_PIXEL[format]);
    expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
    const input = { width: 1000, height: 1000 };
    const to = (side: number) => [
      {
        type: "resize" as const,
        width: side,
        height: side,
        fit: "fill" as const,
        position: "center" as const,
        background: black,
      },
    ];
    const small = estimateJobBytes(input, to(500), 1, "avif") - estimateJobBytes(input, to(500));
    const large = estimateJobBytes(input, to(1000), 1, "avif") - estimateJobBytes(input, to(1000));
    expect(large).toBe(4 * small);
    expect(estimateJobBytes(input, to(500), 3, "gif")).toBe(3 * estimateJobBytes(input, to(500), 1, "gif"));
    // A quality search holds copies of the output beside the encoder.
    expect(
      estimateJobBytes(input, to(500), 1, "webp", true) - estimateJobBytes(input, to(500), 1, "webp"),
    ).toBe(500 * 500 * AUTO_QUALITY_BYTES_PER_PIXEL);
  });
});

/**
 * A pipeline with the default memory budget and a published 50-megapixel image, and a check that a
 * variant is refused for its pixel memory with a 422 before the codec runs.
 */
async function budgeted(autoQuality: ImageFormat[] = []) {
  const { codec, calls } = recordingCodec();
  codec.capabilities.autoQuality = autoQuality;
  const pipeline = createImagePipeline(memoryDeps(codec), {
    delivery: { allowUnsigned: true },
    memoryBudget: {},
  });
  const image = await pipeline.uploadImage(live, { name: "large", image: fake(7071, 7071) });
  await pipeline.publishImage(live, { imageId: image.id });
  const deliver = (file: string) => pipeline.deliverVariant({ imageId: image.id, file, signature: "_" });
  const refusedForMemory = async (file: string) => {
    const before = calls.length;
    const refused = await refusal(deliver(file));
    expect(refused.code).toBe("IMAGE_TOO_LARGE");
    expect(refused.issues[0]?.message).toMatch(/^needs about \d+ MB of pixel memory/);
    expect(calls.length).toBe(before);
  };
  return { calls, deliver, refusedForMemory };
}

describe("the budget with the encoder counted", () => {
  it("refuses rot_45 of 50 megapixels to an allowed-size AVIF with a 422 before the codec runs", async () => {
    const { calls, deliver, refusedForMemory } = await budgeted();
    // The output (4000 x 4000) is within AVIF's limit; the rotated 10000 x 10000 canvas and the
    // encoder together are not within the default 1 GiB.
    await refusedForMemory("h_4000,rot_45,w_4000.avif");
    // The same variant in JPEG fits (its encoder streams).
    const uploads = calls.length;
    await deliver("h_4000,rot_45,w_4000.jpg");
    expect(calls.length).toBe(uploads + 1);
  });
});

describe("the budget with a quality search counted", () => {
  it("refuses q_auto on a 7000 x 7000 JPEG that fits at a fixed quality, with a 422 before the codec runs", async () => {
    const { calls, deliver, refusedForMemory } = await budgeted(["jpeg"]);
    await refusedForMemory("h_7000,q_auto,w_7000.jpg");
    const uploads = calls.length;
    await deliver("h_7000,w_7000.jpg");
    expect(calls.length).toBe(uploads + 1);
    expect(calls.at(-1)?.output.autoQuality).toBeUndefined();
    await deliver("h_3000,q_auto,w_3000.jpg");
    expect(calls.at(-1)?.output.autoQuality).toBeDefined();
  });
});

describe("per-format output limits", () => {
  it("refuse a 9999 x 9999 AVIF by default with a 422 naming the field, before the codec runs", async () => {
    expect(DEFAULT_LIMITS.maxOutputPixels.avif).toBeLessThan(9999 * 9999);
    const { codec, calls } = recordingCodec();
    const pipeline = createImagePipeline(memoryDeps(codec), {
      delivery: { allowUnsigned: true },
      memoryBudget: {},
    });
    const image = await pipeline.uploadImage(live, { name: "small", image: fake(100, 100) });
    await pipeline.publishImage(live, { imageId: image.id });
    const uploads = calls.length;

    const transformed = await refusal(
      pipeline.transformImage(live, {
        imageId: image.id,
        body: {
          steps: [
            { op: "resize", width: 9999, height: 9999, fit: "fill" },
            { op: "convert", format: "avif" },
          ],
        },
      }),
    );
    expect(transformed.code).toBe("OUTPUT_TOO_LARGE");
    expect(transformed.issues.map((issue) => issue.path)).toEqual(["steps.0.width"]);
    expect(transformed.issues[0]?.message).toMatch(/avif image of at most 16,777,216 pixels/);

    // Variants never exceed their source unless enlarge_1 asks for it.
    const variant = await refusal(
      pipeline.deliverVariant({ imageId: image.id, file: "enlarge_1,h_9999,w_9999.avif", signature: "_" }),
    );
    expect(variant.code).toBe("OUTPUT_TOO_LARGE");
    expect(variant.issues.map((issue) => issue.path)).toEqual(["w_9999"]);
    // Nothing was decoded or encoded for either, and no memory is left reserved.
    expect(calls.length).toBe(uploads);
    expect(pipeline.memory()?.reservedBytes).toBe(0);

    // The largest AVIF is allowed.
    await pipeline.deliverVariant({
      imageId: image.id,
      file: "enlarge_1,h_4096,w_4096.avif",
      signature: "_",
    });
    expect(calls.at(-1)?.output.format).toBe("avif");
    // An `auto` variant skips AVIF when the output is too large for it (WebP's limit is higher),
    // and WebP when too large for that too, rather than failing.
    const auto = await pipeline.deliverVariant({
      imageId: image.id,
      file: "enlarge_1,h_4500,w_4500.auto",
      signature: "_",
      accept: "image/avif,image/webp",
    });
    expect(auto.contentType).toBe("image/webp");
    const larger = await pipeline.deliverVariant({
      imageId: image.id,
      file: "enlarge_1,h_9999,w_9999.auto",
      signature: "_",
      accept: "image/avif,image/webp",
    });
    expect(larger.contentType).toBe("image/png");
  });

  it("count every frame of an animation the format keeps animated", () => {
    const limits = { maxOutputPixels: { ...DEFAULT_LIMITS.maxOutputPixels, gif: 100 * 100 } };
    expect(outputPixelsIssue(limits, "gif", { width: 50, height: 50 }, "w_50", 4)).toBeNull();
    expect(outputPixelsIssue(limits, "gif", { width: 50, height: 50 }, "w_50", 5)?.path).toBe("w_50");
    // A still format keeps one frame.
    expect(outputPixelsIssue(limits, "png", { width: 50, height: 50 }, "w_50", 500)).toBeNull();
  });

  it("are configurable per format", async () => {
    const { codec, calls } = recordingCodec();
    const pipeline = createImagePipeline(memoryDeps(codec), {
      limits: { maxOutputPixels: { webp: 50 * 50, gif: 40 * 40 } },
    });
    const image = await pipeline.uploadImage(live, { name: "small", image: fake(60, 60) });
    const before = calls.length;
    const converted = await refusal(
      pipeline.convertImage(live, { imageId: image.id, body: { format: "webp" } }),
    );
    expect(converted.code).toBe("OUTPUT_TOO_LARGE");
    expect(converted.issues.map((issue) => issue.path)).toEqual(["format"]);
    const rotated = await refusal(
      pipeline.transformImage(live, {
        imageId: image.id,
        body: {
          steps: [
            { op: "resize", width: 30 },
            { op: "rotate", angle: 45 },
            { op: "convert", format: "gif" },
          ],
        },
      }),
    );
    expect(rotated.issues.map((issue) => issue.path)).toEqual(["steps.1.angle"]);
    expect(calls.length).toBe(before);
    // An upload is re-encoded in its own format: one too large for it names the upload's field.
    const uploaded = await refusal(
      createImagePipeline(memoryDeps(codec), { limits: { maxOutputPixels: { png: 50 * 50 } } }).uploadImage(
        live,
        { name: "large", image: fake(60, 60) },
      ),
    );
    expect(uploaded.code).toBe("OUTPUT_TOO_LARGE");
    expect(uploaded.issues.map((issue) => issue.path)).toEqual(["image"]);
    await pipeline.transformImage(live, {
      imageId: image.id,
      body: {
        steps: [
          { op: "resize", width: 40 },
          { op: "convert", format: "gif" },
        ],
      },
    });
    expect(calls.length).toBe(before + 1);
  });
});
