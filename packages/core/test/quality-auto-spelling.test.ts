import { describe, expect, it } from "vitest";
import { createImagePipeline, type OriginSource } from "../src/index.js";
import { AUTO_QUALITY_TARGETS } from "../src/operations/quality-levels.js";
import { cacheToken } from "../src/operations/variant-url.js";
import { fake, fakeCodec, live, recordingSigner } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

/** A codec that chooses WebP's quality, and a signer that accepts every signature and records what it verified. */
function setup() {
  const { codec, calls } = fakeCodec(["resize"]);
  codec.capabilities.autoQuality = ["webp"];
  return { codec, calls, ...recordingSigner() };
}

describe("q_auto and q_auto:good are one variant", () => {
  it("keys q_auto:good as q_auto and leaves every other token as written", () => {
    expect(cacheToken("q_auto:good")).toBe("q_auto");
    for (const token of ["q_auto", "q_auto:eco", "q_auto:best", "q_80", "w_auto", "p_good"]) {
      expect(cacheToken(token)).toBe(token);
    }
  });

  it("stored images: each spelling is verified as written, and a miss on one is a hit on the other", async () => {
    const { codec, calls, signer, verified } = setup();
    const pipeline = createImagePipeline(memoryDeps(codec, { variantSigner: signer }));
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(400, 300) });
    await pipeline.publishImage(live, { imageId: image.id });
    const get = (file: string) => pipeline.deliverVariant({ imageId: image.id, file, signature: "sig" });

    const first = await get("q_auto:good,w_200.webp");
    expect(first.cache).toBe("MISS");
    expect(calls.at(-1)!.output.autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.good.webp);
    const made = calls.length;
    const second = await get("q_auto,w_200.webp");
    expect(second.cache).toBe("HIT");
    expect(second.etag).toBe(first.etag);
    expect(calls.length).toBe(made);
    expect(verified).toEqual([`/${image.id}/q_auto:good,w_200.webp`, `/${image.id}/q_auto,w_200.webp`]);

    // The other way round, and with an expiry (which the key never holds).
    expect((await get("q_auto,w_120.webp")).cache).toBe("MISS");
    expect((await get("exp_4102444800,q_auto:good,w_120.webp")).cache).toBe("HIT");
    // Another level is another variant.
    expect((await get("q_auto:eco,w_200.webp")).cache).toBe("MISS");
    expect(calls.at(-1)!.output.autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.eco.webp);
  });

  it("origin images: a miss on one spelling is a hit on the other, each verified as written", async () => {
    const { codec, calls, signer, verified } = setup();
    const source: OriginSource = {
      kind: "fake",
      get: async () => ({ status: "found", data: fake(400, 300), validators: { etag: '"1"' } }),
    };
    const pipeline = createImagePipeline(
      memoryDeps(codec, { variantSigner: signer, origins: { cms: source } }),
    );
    const get = (modifiers: string) =>
      pipeline.deliverOriginVariant({ signature: "sig", origin: "cms", modifiers, path: "a.png.webp" });

    expect((await get("q_auto,w_200")).cache).toBe("MISS");
    const made = calls.length;
    expect((await get("q_auto:good,w_200")).cache).toBe("HIT");
    expect(calls.length).toBe(made);
    expect(verified).toEqual(["/o/cms/q_auto,w_200/a.png.webp", "/o/cms/q_auto:good,w_200/a.png.webp"]);
    expect((await get("q_auto:best,w_200")).cache).toBe("MISS");
  });
});
