import { describe, expect, it } from "vitest";
import { createImagePipeline, ErrorCodes, type OriginSource } from "../src/index.js";
import { parseOriginPath } from "../src/operations/origin-url.js";
import { fake, fakeCodec, live, recordingSigner, refusal } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

/** The error `run` throws. */
function thrown(run: () => unknown): { code?: string; message?: string } {
  try {
    run();
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error("expected a throw");
}

describe("origin paths have one spelling of the extension", () => {
  it("takes the lower-case extension and refuses another case with a 404 naming the spelling", () => {
    expect(parseOriginPath("shop/a%20b.png.webp")).toEqual({
      raw: "shop/a%20b.png",
      segments: ["shop", "a b.png"],
      ext: "webp",
    });
    for (const [written, spelling] of [
      ["shop/a%20b.png.WEBP", "shop/a%20b.png.webp"],
      ["a.png.Jpg", "a.png.jpg"],
      ["a.png.AUTO", "a.png.auto"],
    ] as const) {
      const error = thrown(() => parseOriginPath(written));
      expect(error.code, written).toBe(ErrorCodes.ROUTE_NOT_FOUND);
      expect(error.message).toBe(
        `Variant URLs have one spelling: ${spelling} (lower-case extension), not ${written}.`,
      );
    }
  });

  it("keeps a 422 for an extension that is no output format, and checks the segments first", () => {
    expect(thrown(() => parseOriginPath("a.png.BMP")).code).toBe(ErrorCodes.VALIDATION_FAILED);
    expect(thrown(() => parseOriginPath("shop.d/a")).code).toBe(ErrorCodes.VALIDATION_FAILED);
    expect(thrown(() => parseOriginPath("../a.png.WEBP")).code).toBe(ErrorCodes.VALIDATION_FAILED);
    // A segment not written as encodeURIComponent writes it is named before the extension.
    expect(thrown(() => parseOriginPath("a%2Db.png.WEBP")).message).toMatch(/one spelling per path: a-b/);
  });
});

describe("the one spelling is checked before the signature", () => {
  it("origin images: an upper-case extension is a 404, and no signature is checked nor original fetched", async () => {
    const { codec } = fakeCodec(["resize"]);
    const { signer, verified } = recordingSigner();
    const fetched: string[] = [];
    const source: OriginSource = {
      kind: "fake",
      get: async (request) => {
        fetched.push(request.segments.join("/"));
        return { status: "found", data: fake(40, 20), validators: { etag: '"1"' } };
      },
    };
    const pipeline = createImagePipeline(
      memoryDeps(codec, { variantSigner: signer, origins: { cms: source } }),
    );
    const ask = (path: string) =>
      pipeline.deliverOriginVariant({ signature: "sig", origin: "cms", modifiers: "w_10", path });
    const refused = await refusal(ask("a.png.WEBP"));
    expect(refused.code).toBe(ErrorCodes.ROUTE_NOT_FOUND);
    expect([verified, fetched]).toEqual([[], []]);
    expect((await ask("a.png.webp")).contentType).toBe("image/webp");
    expect(verified).toEqual(["/o/cms/w_10/a.png.webp"]);
  });

  it("stored images: an upper-case extension is a 404 naming the spelling, before the signature", async () => {
    const { codec } = fakeCodec(["resize"]);
    const { signer, verified } = recordingSigner();
    const pipeline = createImagePipeline(memoryDeps(codec, { variantSigner: signer }));
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(40, 20) });
    await pipeline.publishImage(live, { imageId: image.id });
    const ask = (file: string) => pipeline.deliverVariant({ imageId: image.id, file, signature: "sig" });
    for (const file of ["w_10.JPG", "w_10.WebP"]) {
      const refused = await refusal(ask(file));
      expect(refused.code, file).toBe(ErrorCodes.ROUTE_NOT_FOUND);
      expect(refused.message).toContain(`one spelling: ${file.toLowerCase()} `);
    }
    expect(verified).toEqual([]);
    expect((await ask("w_10.jpg")).contentType).toBe("image/jpeg");
  });
});
