import { describe, expect, it } from "vitest";
import {
  cutoutPng,
  openRemovalImage,
  type SharpLikeMetadata,
  type SharpLikePipeline,
} from "../src/adapter-kit.js";

/**
 * A stand-in for sharp that records the calls made on each pipeline and answers `toBuffer` with
 * the bytes given (the real library is the removers' tests' business; this checks what the kit
 * asks of it).
 */
function fakeSharp(meta: SharpLikeMetadata | Error, decoded: Uint8Array) {
  const pipelines: { input: Uint8Array; options: object; calls: string[]; joined?: Uint8Array }[] = [];
  const sharp = (input: Uint8Array, options: object): SharpLikePipeline => {
    const record = { input, options, calls: [] as string[], joined: undefined as Uint8Array | undefined };
    pipelines.push(record);
    const step = (call: string) => () => {
      record.calls.push(call);
      return pipeline;
    };
    const pipeline: SharpLikePipeline = {
      metadata: async () => {
        if (meta instanceof Error) throw meta;
        return meta;
      },
      toColourspace: (space) => step(`toColourspace ${space}`)(),
      ensureAlpha: step("ensureAlpha"),
      removeAlpha: step("removeAlpha"),
      raw: step("raw"),
      joinChannel: (images) => {
        record.joined = images as Uint8Array;
        return step("joinChannel")();
      },
      png: step("png"),
      toBuffer: async () => (record.calls.includes("png") ? Uint8Array.of(137, 80) : decoded),
    };
    return pipeline;
  };
  return { sharp, pipelines };
}

const request = (width: number, height: number) => ({ image: Uint8Array.of(1, 2, 3), width, height });

describe("the background removers' cut-out steps", () => {
  it("opens the request's bytes EXIF-oriented with the pixel limit, and takes the displayed size", async () => {
    const { sharp, pipelines } = fakeSharp(
      { width: 3, height: 2, hasAlpha: false, autoOrient: { width: 2, height: 3 } },
      new Uint8Array(),
    );
    const image = await openRemovalImage(sharp, request(2, 3), 500);
    expect(image).toMatchObject({ width: 2, height: 3, hasAlpha: false });
    expect(pipelines[0]?.options).toEqual({ limitInputPixels: 500, failOn: "error", autoOrient: true });
  });

  it("refuses bytes the library cannot read with INVALID_IMAGE, and a size unlike the request's with INTERNAL", async () => {
    const unreadable = fakeSharp(new Error("bad seek"), new Uint8Array());
    await expect(openRemovalImage(unreadable.sharp, request(2, 2), 500)).rejects.toMatchObject({
      code: "INVALID_IMAGE",
      message: "The image cannot be decoded: bad seek",
    });
    const other = fakeSharp({ width: 4, height: 2 }, new Uint8Array());
    await expect(openRemovalImage(other.sharp, request(2, 2), 500)).rejects.toMatchObject({
      code: "INTERNAL",
    });
  });

  it("joins the mask to an opaque image as its alpha channel, as it is", async () => {
    const rgb = Uint8Array.of(10, 20, 30, 40, 50, 60);
    const { sharp, pipelines } = fakeSharp({ width: 2, height: 1 }, rgb);
    const image = await openRemovalImage(sharp, request(2, 1), 500);
    const alpha = Uint8Array.of(0, 255);
    expect(await cutoutPng(image, alpha)).toEqual(Uint8Array.of(137, 80));
    const decode = pipelines[1];
    expect(decode?.calls).toEqual(["toColourspace srgb", "removeAlpha", "raw"]);
    const join = pipelines[2];
    expect(join?.input).toBe(rgb);
    expect(join?.options).toEqual({ raw: { width: 2, height: 1, channels: 3 } });
    expect(join?.calls).toEqual(["joinChannel", "png"]);
    expect(join?.joined).toBe(alpha);
  });

  it("lowers the alpha of an image that has one to the mask's, never above its own", async () => {
    const rgba = Uint8Array.of(1, 2, 3, 100, 4, 5, 6, 255);
    const { sharp, pipelines } = fakeSharp({ width: 2, height: 1, hasAlpha: true }, rgba);
    const image = await openRemovalImage(sharp, request(2, 1), 500);
    await cutoutPng(image, Uint8Array.of(200, 50));
    expect(pipelines[1]?.calls).toEqual(["toColourspace srgb", "ensureAlpha", "raw"]);
    const join = pipelines[2];
    expect(join?.options).toEqual({ raw: { width: 2, height: 1, channels: 4 } });
    expect([...(join?.input ?? [])]).toEqual([1, 2, 3, 100, 4, 5, 6, 50]);
    expect(join?.calls).toEqual(["png"]);
  });
});
