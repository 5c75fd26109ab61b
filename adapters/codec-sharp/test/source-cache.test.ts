import { createSharpCodec } from "@pixport/codec-sharp";
import { type ImageCodec, isImagePipelineError, type TransformRequest } from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";

const LIMITS = { maxInputPixels: 50_000_000 };

/** A noisy photo-like image with a red left half and a blue right half, encoded as `format`. */
async function picture(
  format: "jpeg" | "png" | "webp",
  options: { width?: number; height?: number; alpha?: boolean; orientation?: number; right?: string } = {},
): Promise<Uint8Array> {
  const width = options.width ?? 640;
  const height = options.height ?? 400;
  const channels = options.alpha ? 4 : 3;
  const noise = await sharp({
    create: {
      width,
      height,
      channels,
      background: "#000000",
      noise: { type: "gaussian", mean: 128, sigma: 40 },
    },
  })
    .png()
    .toBuffer();
  const half = await sharp({
    create: {
      width: width / 2,
      height,
      channels,
      background: options.alpha ? { r: 255, g: 0, b: 0, alpha: 0.5 } : "#ff0000",
    },
  })
    .png()
    .toBuffer();
  const right = await sharp({
    create: { width: width / 2, height, channels, background: options.right ?? "#0000ff" },
  })
    .png()
    .toBuffer();
  const composed = await sharp(noise)
    .composite([
      { input: half, left: 0, top: 0, blend: "over" },
      { input: right, left: width / 2, top: 0, blend: "soft-light" },
    ])
    .png()
    .toBuffer();
  // Compositing adds an alpha channel; an opaque picture drops it again.
  let image = options.alpha ? sharp(composed) : sharp(composed).removeAlpha();
  if (options.orientation !== undefined) image = image.withMetadata({ orientation: options.orientation });
  return new Uint8Array(await image.toFormat(format).toBuffer());
}

function request(input: Uint8Array, steps: TransformRequest["steps"], sourceKey?: string): TransformRequest {
  return {
    input,
    steps,
    output: { format: "png", quality: 90, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } },
    limits: LIMITS,
    ...(sourceKey === undefined ? {} : { sourceKey }),
  };
}

/** The average colour of the output's left and right quarters (red, green, blue). */
async function sides(
  data: Uint8Array,
): Promise<{ left: number[]; right: number[]; width: number; height: number }> {
  const { data: pixels, info } = await sharp(data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const average = (from: number, to: number) => {
    const sum = [0, 0, 0];
    let count = 0;
    for (let y = 0; y < info.height; y += 1) {
      for (let x = from; x < to; x += 1) {
        const at = (y * info.width + x) * 3;
        for (let c = 0; c < 3; c += 1) sum[c]! += pixels[at + c]!;
        count += 1;
      }
    }
    return sum.map((value) => value / count);
  };
  return {
    left: average(0, Math.floor(info.width / 4)),
    right: average(Math.ceil((info.width * 3) / 4), info.width),
    width: info.width,
    height: info.height,
  };
}

const resize = (width: number): TransformRequest["steps"] => [
  {
    type: "resize",
    width,
    height: Math.round((width * 400) / 640),
    fit: "fill",
    position: "center",
    background: { r: 0, g: 0, b: 0, alpha: 1 },
  },
];

describe("sharp codec: decoded sources kept by sourceKey", () => {
  it("keeps a source from its second use: a third use under the same key starts from the kept pixels", async () => {
    const codec = createSharpCodec();
    const blue = await picture("jpeg");
    const green = await picture("jpeg", { right: "#00ff00" });
    // First use: not kept. Second use: decoded and kept. The third use passes other bytes under the
    // same key (breaking the key's promise on purpose) and still gets the kept picture: the codec
    // started from the kept pixels, not from the bytes it was given.
    await codec.transform(request(blue, resize(320), "k-blue"));
    await codec.transform(request(blue, resize(320), "k-blue"));
    const third = await sides((await codec.transform(request(green, resize(320), "k-blue"))).data);
    expect(third.right[2]).toBeGreaterThan(third.right[1]!);
    // Without a key the same bytes are decoded as given.
    const unkeyed = await sides((await codec.transform(request(green, resize(320)))).data);
    expect(unkeyed.right[1]).toBeGreaterThan(unkeyed.right[2]!);
  });

  it("keeps nothing from a key's first use, and nothing at all with sourceCacheBytes 0", async () => {
    const blue = await picture("jpeg");
    const green = await picture("jpeg", { right: "#00ff00" });
    const codec = createSharpCodec();
    await codec.transform(request(blue, resize(320), "once"));
    const second = await sides((await codec.transform(request(green, resize(320), "once"))).data);
    expect(second.right[1]).toBeGreaterThan(second.right[2]!);

    const off = createSharpCodec({ sourceCacheBytes: 0 });
    for (let use = 0; use < 2; use += 1) await off.transform(request(blue, resize(320), "off"));
    const third = await sides((await off.transform(request(green, resize(320), "off"))).data);
    expect(third.right[1]).toBeGreaterThan(third.right[2]!);
  });

  it("gives the same pixels as a decode for reductions under 2x, for jpeg, png with and without alpha and EXIF-rotated sources, smart crops included", async () => {
    const sources = {
      jpeg: await picture("jpeg"),
      alpha: await picture("png", { alpha: true }),
      opaque: await picture("png"),
      rotated: await picture("jpeg", { orientation: 6 }),
    };
    expect((await sharp(sources.alpha).metadata()).channels).toBe(4);
    expect((await sharp(sources.opaque).metadata()).channels).toBe(3);
    const cover = (position: "attention" | "entropy"): TransformRequest["steps"] => [
      {
        type: "resize",
        width: 300,
        height: 300,
        fit: "cover",
        position,
        background: { r: 0, g: 0, b: 0, alpha: 1 },
      },
    ];
    const plans: Record<string, TransformRequest["steps"]> = {
      resize: resize(400),
      "smart crop (attention)": cover("attention"),
      "smart crop (entropy)": cover("entropy"),
      "crop, rotate, blur": [
        { type: "crop", left: 10, top: 20, width: 300, height: 200 },
        { type: "rotate", angle: 30, background: { r: 0, g: 0, b: 0, alpha: 0 } },
        { type: "blur", sigma: 2 },
      ],
      none: [],
    };
    const kept = createSharpCodec();
    const decoded = createSharpCodec({ sourceCacheBytes: 0 });
    for (const [name, input] of Object.entries(sources)) {
      for (const [plan, steps] of Object.entries(plans)) {
        const key = `${name}/${plan}`;
        await kept.transform(request(input, steps, key));
        await kept.transform(request(input, steps, key));
        const fromKept = await kept.transform(request(input, steps, key));
        const fromDecode = await decoded.transform(request(input, steps, key));
        expect([fromKept.width, fromKept.height], key).toEqual([fromDecode.width, fromDecode.height]);
        // The same pixels (the PNG files may differ in their density chunk, copied from a JPEG's header).
        const [keptPixels, decodedPixels] = await Promise.all(
          [fromKept, fromDecode].map((encoded) =>
            sharp(encoded.data).raw().toBuffer({ resolveWithObject: true }),
          ),
        );
        expect(keptPixels!.info.channels, key).toBe(decodedPixels!.info.channels);
        if (name === "rotated" && plan.startsWith("smart crop")) {
          // A smart crop of an EXIF-rotated decode and of the same upright pixels differ by
          // rounding in sharp (a mean difference of 0.05 to 0.2 levels here): compared as such.
          let total = 0;
          for (let index = 0; index < keptPixels!.data.length; index += 1)
            total += Math.abs(keptPixels!.data[index]! - decodedPixels!.data[index]!);
          expect(total / keptPixels!.data.length, key).toBeLessThan(1);
          continue;
        }
        expect(keptPixels!.data.equals(decodedPixels!.data), key).toBe(true);
      }
    }
    // The rotated source is kept upright: a resize to 200 wide is 320 high (640x400 turned).
    const upright = await kept.transform(
      request(sources.rotated, [{ ...resize(200)[0]!, height: 320 } as never], "rotated/resize"),
    );
    expect([upright.width, upright.height]).toEqual([200, 320]);
  });

  it("resamples its kept pixels where a decode shrinks on load (JPEG from 2x, WebP): the same picture", async () => {
    const cases = [
      { key: "jpeg 2x+", input: await picture("jpeg", { width: 1600, height: 1000 }), width: 300 },
      { key: "webp", input: await picture("webp"), width: 400 },
    ];
    const kept = createSharpCodec();
    const decoded = createSharpCodec({ sourceCacheBytes: 0 });
    for (const { key, input, width } of cases) {
      const steps = resize(width);
      for (let use = 0; use < 2; use += 1) await kept.transform(request(input, steps, key));
      const fromKept = await sides((await kept.transform(request(input, steps, key))).data);
      const fromDecode = await sides((await decoded.transform(request(input, steps))).data);
      expect([fromKept.width, fromKept.height], key).toEqual([fromDecode.width, fromDecode.height]);
      for (const side of ["left", "right"] as const) {
        for (let c = 0; c < 3; c += 1)
          expect(Math.abs(fromKept[side][c]! - fromDecode[side][c]!), key).toBeLessThan(3);
      }
    }
  });

  it("does not keep animations, 16-bit images or sources over a quarter of its size, and evicts the least recently used", async () => {
    const roomy = createSharpCodec();
    const codec = createSharpCodec({ sourceCacheBytes: 4 * 640 * 400 * 3 });
    const green = await picture("png", { right: "#00ff00" });
    const expectDecodedAsGiven = async (
      first: Uint8Array,
      key: string,
      steps = resize(320),
      on: ImageCodec = codec,
    ) => {
      for (let use = 0; use < 2; use += 1) await on.transform(request(first, steps, key));
      const third = await sides((await on.transform(request(green, steps, key))).data);
      expect(third.right[1], key).toBeGreaterThan(third.right[2]!);
    };
    // Two different frames (libwebp would merge two equal ones into one).
    const frames = [
      await sharp(await picture("png"))
        .raw()
        .toBuffer(),
      await sharp(green).raw().toBuffer(),
    ];
    const animation = new Uint8Array(
      await sharp(Buffer.concat(frames), {
        raw: { width: 640, height: 800, channels: 3, pageHeight: 400 },
      })
        .webp({ loop: 0, delay: [100, 100] })
        .toBuffer(),
    );
    expect((await sharp(animation).metadata()).pages).toBe(2);
    await expectDecodedAsGiven(animation, "animated", resize(320), roomy);
    const deep = new Uint8Array(
      await sharp(await picture("png"))
        .toColourspace("rgb16")
        .png()
        .toBuffer(),
    );
    expect((await sharp(deep).metadata()).depth).toBe("ushort");
    await expectDecodedAsGiven(deep, "deep", resize(320), roomy);
    // Over a quarter of the cache at the size a reduction under 2x keeps it (the whole source).
    await expectDecodedAsGiven(await picture("png", { width: 1280, height: 800 }), "big", resize(1000));

    // Room for four whole sources (reductions under 2x): a, b, c, d kept, then e pushes out a (the
    // least recently used).
    const blue = await picture("png");
    for (const key of ["a", "b", "c", "d", "e"]) {
      for (let use = 0; use < 2; use += 1) await codec.transform(request(blue, resize(400), key));
    }
    const b = await sides((await codec.transform(request(green, resize(400), "b"))).data);
    expect(b.right[2]).toBeGreaterThan(b.right[1]!);
    const a = await sides((await codec.transform(request(green, resize(400), "a"))).data);
    expect(a.right[1]).toBeGreaterThan(a.right[2]!);
  });

  it("keeps a source with an embedded colour profile in sRGB, as a decode converts it", async () => {
    // Display P3 pixels of an sRGB (200, 40, 60): both paths must convert them back, not pass them on.
    const flat = await sharp({
      create: { width: 400, height: 200, channels: 3, background: { r: 200, g: 40, b: 60 } },
    })
      .jpeg()
      .toBuffer();
    const input = new Uint8Array(await sharp(flat).withIccProfile("p3").jpeg({ quality: 95 }).toBuffer());
    expect((await sharp(input).metadata()).icc).toBeDefined();
    const stored = [...(await sharp(input, { ignoreIcc: true }).raw().toBuffer()).subarray(0, 3)];
    expect(Math.abs(stored[1]! - 40)).toBeGreaterThan(5); // the file holds P3 values
    const codec = createSharpCodec();
    for (let use = 0; use < 3; use += 1) {
      const { data } = await codec.transform(request(input, resize(300), "p3"));
      const [r, g, b] = (await sharp(data).raw().toBuffer()).subarray(0, 3);
      expect(
        [Math.abs(r! - 200), Math.abs(g! - 40), Math.abs(b! - 60)].every((d) => d <= 3),
        `use ${use}`,
      ).toBe(true);
    }
  });

  it("answers a corrupt source under a key as without one, on every use", async () => {
    const whole = await picture("jpeg");
    const truncated = whole.subarray(0, Math.floor(whole.length * 0.6));
    const codec = createSharpCodec();
    const codeOf = (sourceKey?: string) =>
      codec.transform(request(truncated, resize(320), sourceKey)).then(
        () => "no error",
        (error: unknown) => (isImagePipelineError(error) ? error.code : String(error)),
      );
    const expected = await codeOf();
    expect(expected).toBe("INVALID_IMAGE");
    for (let use = 0; use < 3; use += 1) expect(await codeOf("truncated"), `use ${use}`).toBe(expected);
  });

  it("still applies each request's pixel limit to a kept source", async () => {
    const codec: ImageCodec = createSharpCodec();
    const input = await picture("jpeg");
    for (let use = 0; use < 2; use += 1) await codec.transform(request(input, resize(320), "limited"));
    const refused = await codec
      .transform({ ...request(input, resize(320), "limited"), limits: { maxInputPixels: 1000 } })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(isImagePipelineError(refused) && refused.code).toBe("IMAGE_TOO_LARGE");
  });
});
