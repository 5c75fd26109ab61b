import { createSharpCodec } from "@pixport/codec-sharp";
import { isImagePipelineError, processImage } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";

async function halves(): Promise<Uint8Array> {
  const left = await sharp({ create: { width: 100, height: 100, channels: 3, background: "#ff0000" } })
    .png()
    .toBuffer();
  return new Uint8Array(
    await sharp({ create: { width: 200, height: 100, channels: 3, background: "#0000ff" } })
      .composite([{ input: left, left: 0, top: 0 }])
      .png()
      .toBuffer(),
  );
}

describe("processImage (bytes in, bytes out, no storage)", () => {
  const codec = createSharpCodec();

  it("runs the steps in one decode/encode with the fields of the single operations", async () => {
    const result = await processImage(
      await halves(),
      [
        { op: "resize", width: 100 },
        { op: "rotate", angle: 90 },
        { op: "convert", format: "webp", quality: 90 },
      ],
      { codec },
    );
    expect([result.format, result.width, result.height]).toEqual(["webp", 50, 100]);
    const { data, info } = await sharp(result.data).raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => [
      ...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3),
    ];
    expect(at(25, 15)[0]).toBeGreaterThan(200); // red on top
    expect(at(25, 85)[2]).toBeGreaterThan(200); // blue below
  });

  it("validates like the HTTP route, refuses watermarks (they need stored images) and bad bytes", async () => {
    const bad = await processImage(
      await halves(),
      [
        { op: "blur", sigma: 0 },
        { op: "watermark", watermarks: [] },
      ] as never,
      {
        codec,
      },
    ).catch((error: unknown) => error);
    expect(isImagePipelineError(bad) && bad.issues.map((issue) => `${issue.path} ${issue.message}`)).toEqual([
      "steps.0.sigma must be a number between 1 and 1000",
      "steps.1.watermarks must be an array of 1 to 5 watermarks",
    ]);
    const watermark = await processImage(
      await halves(),
      [{ op: "watermark", watermarks: [{ id: "image_aaaaaaaaaaaaaaaaaaaaaaaa" }] }],
      { codec },
    ).catch((error: unknown) => error);
    expect(isImagePipelineError(watermark) && watermark.issues[0]?.path).toBe("steps.0.op");
    const garbage = await processImage(new Uint8Array([1, 2, 3]), [{ op: "mirror", mode: "both" }], {
      codec,
    }).catch((error: unknown) => error);
    expect(isImagePipelineError(garbage) && garbage.code).toBe("INVALID_IMAGE");
  });
});
