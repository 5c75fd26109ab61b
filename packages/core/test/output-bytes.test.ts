import { describe, expect, it } from "vitest";
import { createImagePipeline, DEFAULT_LIMITS, IMAGE_FORMATS } from "../src/index.js";
import { fake, fakeCodec, live, refusal, sizeOf } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

// The byte limits per output format refuse an encoded result over them (422 OUTPUT_TOO_LARGE) and
// nothing of it is stored, cached or billed; signed-url refuses, before minting a URL, a variant
// the output limits would refuse on every request of it.

/** A codec whose every encode is one byte a pixel of its output, so a size is asked by its pixels. */
function bytePerPixelCodec() {
  return fakeCodec(["resize", "crop"], (request) => {
    let size = sizeOf(request.input);
    for (const step of request.steps) {
      if (step.type === "resize" || step.type === "crop") size = { width: step.width, height: step.height };
    }
    // The output carries its size in a fake header, padded to one byte a pixel.
    const data = new Uint8Array(Math.max(12, size.width * size.height));
    data.set(fake(size.width, size.height));
    return { data, ...size };
  });
}

describe("per-format output byte limits", () => {
  it("have a default for every format", () => {
    for (const format of IMAGE_FORMATS) expect(DEFAULT_LIMITS.maxOutputBytes[format]).toBeGreaterThan(0);
  });

  it("refuse an encoded result over its format's limit with a 422, storing, caching and billing nothing", async () => {
    const { codec, calls } = bytePerPixelCodec();
    const deps = memoryDeps(codec);
    const pipeline = createImagePipeline(deps, {
      limits: { maxOutputBytes: { webp: 1000 } },
      delivery: { allowUnsigned: true },
    });
    const image = await pipeline.uploadImage(live, { name: "small", image: fake(30, 30) });
    await pipeline.publishImage(live, { imageId: image.id });
    const stored = async () => {
      const keys: string[] = [];
      for await (const entry of deps.blobStore.list?.("") ?? []) keys.push(entry.key);
      return keys.sort();
    };
    const before = { blobs: await stored(), usage: (await pipeline.usage("a")).images };
    expect(before.blobs.length).toBeGreaterThan(0);

    const resized = await refusal(
      pipeline.transformImage(live, {
        imageId: image.id,
        body: {
          steps: [
            { op: "resize", width: 40, height: 40, fit: "fill" },
            { op: "convert", format: "webp" },
          ],
        },
      }),
    );
    expect(resized.code).toBe("OUTPUT_TOO_LARGE");
    expect(resized.issues).toHaveLength(1);
    expect(resized.issues[0]?.path).toMatch(/^steps\.0/);
    expect(resized.issues[0]?.message).toMatch(/webp file of at most 1000 bytes \(would be 1,600 bytes\)/);
    expect(await stored()).toEqual(before.blobs);
    expect((await pipeline.usage("a")).images).toBe(before.usage);

    // A variant over the limit is refused every time it is asked for: never cached.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const variant = await refusal(
        pipeline.deliverVariant({ imageId: image.id, file: "enlarge_1,w_40.webp", signature: "_" }),
      );
      expect(variant.code).toBe("OUTPUT_TOO_LARGE");
    }
    expect(calls.filter((call) => call.output.format === "webp")).toHaveLength(3);
    expect(await stored()).toEqual(before.blobs);

    // Under the limit, or in a format whose limit is higher, the same output is made.
    await pipeline.convertImage(live, { imageId: image.id, body: { format: "webp" } });
    const png = await pipeline.deliverVariant({
      imageId: image.id,
      file: "enlarge_1,w_40.png",
      signature: "_",
    });
    expect(png.data.byteLength).toBe(1600);
  });
});

describe("signed-url and the output limits", () => {
  const signer = { sign: async () => "sig", verify: async () => true };

  it("refuses, before minting it, a URL whose variant the limits would refuse on every request", async () => {
    const { codec, calls } = bytePerPixelCodec();
    const pipeline = createImagePipeline(memoryDeps(codec, { variantSigner: signer }), {
      limits: { maxOutputPixels: { avif: 50 * 50, webp: 60 * 60 } },
      delivery: { baseUrl: "https://cdn.test" },
    });
    const image = await pipeline.uploadImage(live, { name: "private", image: fake(100, 100) });
    const encodes = calls.length;
    const sign = (modifiers: string, format: "avif" | "auto" | "png") =>
      pipeline.createSignedUrl(live, { imageId: image.id, body: { modifiers, format } });

    const avif = await refusal(sign("w_80", "avif"));
    expect(avif.code).toBe("OUTPUT_TOO_LARGE");
    expect(avif.issues.map((issue) => issue.path)).toEqual(["w_80"]);
    expect(avif.issues[0]?.message).toMatch(/avif image of at most 2,500 pixels/);
    // A crop outside the image could never be made either.
    const crop = await refusal(sign("crop_0:0:200:200", "png"));
    expect(crop.issues.map((issue) => issue.path)).toEqual(["crop_0:0:200:200"]);
    // Nothing was encoded to find out.
    expect(calls.length).toBe(encodes);

    // `auto` follows the browser: a browser without AVIF and WebP gets a PNG, so the URL is made.
    const auto = await sign("w_80", "auto");
    expect(auto.url).toMatch(/^https:\/\/cdn\.test\/v\/sig\/image_[a-z0-9]+\/exp_\d+,w_80\.auto$/);
    expect((await sign("w_40", "avif")).url).toMatch(/w_40\.avif$/);
  });
});
