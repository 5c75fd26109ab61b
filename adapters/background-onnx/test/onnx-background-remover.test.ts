import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import { childProcesses } from "@pixport/testing";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createOnnxBackgroundRemover,
  MODEL_PRESETS,
  type OnnxBackgroundRemoverOptions,
} from "../src/index.js";
import { inferenceEnv } from "../src/inference-env.js";
import { channelModel } from "./tiny-onnx.js";

// Pre- and post-processing checked exactly with tiny hand-written models whose "mask" is one input
// channel: the alpha the adapter answers must be that channel through the configured mapping.

const WIDTH = 40;
const HEIGHT = 30;

/** A lossless image whose red channel is `red(x, y)`, green 100, blue 50. */
async function image(
  red: (x: number, y: number) => number,
  alpha?: (x: number, y: number) => number,
): Promise<Uint8Array> {
  const channels = alpha === undefined ? 3 : 4;
  const raw = Buffer.alloc(WIDTH * HEIGHT * channels);
  for (let y = 0; y < HEIGHT; y += 1) {
    for (let x = 0; x < WIDTH; x += 1) {
      const pixel = [red(x, y), 100, 50];
      if (alpha !== undefined) pixel.push(alpha(x, y));
      raw.set(pixel, (y * WIDTH + x) * channels);
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels } })
      .png()
      .toBuffer(),
  );
}

async function decode(png: Uint8Array) {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  return {
    data,
    info,
    at: (x: number, y: number) =>
      Array.from(data.subarray((y * info.width + x) * 4, (y * info.width + x) * 4 + 4)),
  };
}

const gradient = (x: number) => Math.round((x * 255) / (WIDTH - 1));
const identity = {
  mean: [0, 0, 0],
  std: [1, 1, 1],
  output: "probability",
  normalize: "none",
  alphaClip: 0,
} as const;

async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(isImagePipelineError(error), `expected a pixport ${code} error, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  return error as Error;
}

describe("createOnnxBackgroundRemover: pre- and post-processing (tiny exact models)", () => {
  it.each(["nchw", "nhwc"] as const)(
    "%s: the alpha is the model's map, the RGB is the original, the PNG is RGBA of the request's size",
    async (layout) => {
      const remover = await createOnnxBackgroundRemover({
        model: channelModel({ layout, height: HEIGHT, width: WIDTH }),
        ...identity,
      });
      expect(remover.settings).toMatchObject({
        layout,
        inputWidth: WIDTH,
        inputHeight: HEIGHT,
        inputName: "image",
      });
      const png = await remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT });
      const { info, at } = await decode(png);
      expect(await sharp(png).metadata()).toMatchObject({
        format: "png",
        width: WIDTH,
        height: HEIGHT,
        channels: 4,
      });
      expect(info.channels).toBe(4);
      for (const [x, y] of [
        [0, 0],
        [13, 7],
        [20, 29],
        [39, 15],
      ] as const) {
        const [r, g, b, a] = at(x, y);
        expect([r, g, b]).toEqual([gradient(x), 100, 50]);
        expect(Math.abs(a! - gradient(x))).toBeLessThanOrEqual(1);
      }
      await remover.close();
    },
  );

  it("feeds channels in R, G, B order", async () => {
    const blue = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH, channel: 2 }),
      ...identity,
    });
    const { at } = await decode(
      await blue.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    expect(at(5, 5)[3]).toBe(50);
    expect(at(35, 20)[3]).toBe(50);
    await blue.close();
  });

  it("normalises the input with mean and std and turns logits into probabilities (birefnet)", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      family: "birefnet",
      mean: [0.5, 0.5, 0.5],
      std: [0.125, 0.125, 0.125],
      alphaClip: 0,
    });
    expect(remover.settings.output).toBe("logits");
    const { at } = await decode(
      await remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    for (const x of [0, 10, 19, 20, 30, 39]) {
      const logit = (gradient(x) / 255 - 0.5) / 0.125;
      const expected = Math.round(255 / (1 + Math.exp(-logit)));
      expect(Math.abs(at(x, 12)[3]! - expected)).toBeLessThanOrEqual(1);
    }
    await remover.close();
  });

  it("stretches the map per image with normalize minmax (u2net), and leaves a flat map alone", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      family: "u2net",
      mean: [0, 0, 0],
      std: [1, 1, 1],
      alphaClip: 0,
    });
    expect(remover.settings.normalize).toBe("minmax");
    const narrow = (x: number) => 100 + Math.round((x * 100) / (WIDTH - 1));
    const { at } = await decode(
      await remover.remove({ image: await image(narrow), width: WIDTH, height: HEIGHT }),
    );
    for (const x of [0, 13, 26, 39]) {
      expect(Math.abs(at(x, 3)[3]! - Math.round(((narrow(x) - 100) / 100) * 255))).toBeLessThanOrEqual(1);
    }
    const flat = await decode(
      await remover.remove({ image: await image(() => 128), width: WIDTH, height: HEIGHT }),
    );
    expect(flat.at(17, 17)[3]).toBe(128);
    await remover.close();
  });

  it("resizes to the model's input size and scales the map back (dynamic input dimensions)", async () => {
    const model = channelModel({ layout: "nchw", height: "height", width: "width" });
    const defaults = await createOnnxBackgroundRemover({ model, family: "u2net" });
    expect(defaults.settings).toMatchObject({
      inputWidth: 320,
      inputHeight: 320,
      mean: MODEL_PRESETS.u2net.mean,
    });
    await defaults.close();
    const remover = await createOnnxBackgroundRemover({
      model,
      ...identity,
      inputWidth: 20,
      inputHeight: 15,
    });
    expect(remover.settings).toMatchObject({ inputWidth: 20, inputHeight: 15 });
    const { at } = await decode(
      await remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    // Bilinear down and up: the gradient survives within a few levels.
    for (const x of [4, 15, 24, 35]) expect(Math.abs(at(x, 10)[3]! - gradient(x))).toBeLessThanOrEqual(10);
    await remover.close();
    // A model input larger than the image: the map is shrunk back (the antialiased graph).
    const larger = await createOnnxBackgroundRemover({ model, ...identity, inputWidth: 80, inputHeight: 60 });
    const shrunk = await decode(
      await larger.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    expect([shrunk.info.width, shrunk.info.height]).toEqual([WIDTH, HEIGHT]);
    for (const x of [0, 4, 15, 24, 35, 39])
      expect(Math.abs(shrunk.at(x, 10)[3]! - gradient(x))).toBeLessThanOrEqual(4);
    await larger.close();
  });

  it("scales the mask of an image above 32 megapixels in the host (libvips) as the process does below", async () => {
    const model = channelModel({ layout: "nchw", height: "height", width: "width" });
    const remover = await createOnnxBackgroundRemover({
      model,
      ...identity,
      inputWidth: 20,
      inputHeight: 15,
    });
    // The same horizontal gradient at 40 x 30 (scaled in the inference process) and at 8000 x 4200
    // (33.6 megapixels: scaled by libvips in the host); 4.5 MB of JPEG-free PNG either way.
    const big = { width: 8000, height: 4200 };
    const bigImage = new Uint8Array(
      await sharp(await image(gradient))
        .resize(big.width, big.height, { fit: "fill", kernel: "nearest" })
        .png({ compressionLevel: 1 })
        .toBuffer(),
    );
    const small = await decode(
      await remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    const large = await decode(await remover.remove({ image: bigImage, ...big }));
    expect([large.info.width, large.info.height, large.info.channels]).toEqual([big.width, big.height, 4]);
    // Bilinear down to 20 x 15 and up again: at the same relative place, the same alpha within a few
    // levels on both paths, and the gradient within the tolerance of the test above.
    for (const x of [4, 15, 24, 35]) {
      const smallAlpha = small.at(x, 10)[3]!;
      const largeAlpha = large.at(Math.round(((x + 0.5) * big.width) / WIDTH - 0.5), 1400)[3]!;
      expect(Math.abs(largeAlpha - smallAlpha)).toBeLessThanOrEqual(6);
      expect(Math.abs(largeAlpha - gradient(x))).toBeLessThanOrEqual(10);
    }
    await remover.close();
  }, 60_000);

  it("clips near-certain probabilities to fully opaque or transparent and stretches the rest (alphaClip)", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      ...identity,
      alphaClip: 0.1,
    });
    const { at } = await decode(
      await remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
    );
    for (const x of [0, 3, 10, 20, 30, 36, 39]) {
      const expected = Math.round(Math.min(1, Math.max(0, (gradient(x) / 255 - 0.1) / 0.8)) * 255);
      expect(Math.abs(at(x, 8)[3]! - expected), `x ${x}`).toBeLessThanOrEqual(1);
    }
    expect(at(0, 8)[3]).toBe(0);
    expect(at(39, 8)[3]).toBe(255);
    await remover.close();
    await expectCode(
      createOnnxBackgroundRemover({
        model: channelModel({ layout: "nchw", height: 8, width: 8 }),
        alphaClip: 0.5,
      }),
      ErrorCodes.INVALID_CONFIGURATION,
    );
  });

  it("never makes a transparent input pixel more opaque", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      ...identity,
    });
    const input = await image(
      () => 255,
      (x) => (x < 20 ? 0 : 200),
    );
    const { at } = await decode(await remover.remove({ image: input, width: WIDTH, height: HEIGHT }));
    expect(at(5, 5)[3]).toBe(0);
    expect(at(30, 5)[3]).toBe(200);
    await remover.close();
  });

  it("runs queued calls one at a time and gives each call its own result", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      ...identity,
      concurrency: 1,
    });
    const levels = [0, 40, 90, 140, 200, 255];
    const images = await Promise.all(levels.map((level) => image(() => level)));
    const results = await Promise.all(
      images.map((input) => remover.remove({ image: input, width: WIDTH, height: HEIGHT })),
    );
    for (const [index, png] of results.entries()) {
      expect((await decode(png)).at(11, 11)[3]).toBe(levels[index]);
    }
    await remover.close();
  });
});

describe("createOnnxBackgroundRemover: errors", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "pixport-onnx-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const base = (model: OnnxBackgroundRemoverOptions["model"]) => ({ model, ...identity });

  it("rejects a missing or unreadable model with INVALID_CONFIGURATION naming it", async () => {
    const missing = path.join(dir, "missing.onnx");
    const error = await expectCode(
      createOnnxBackgroundRemover(base(missing)),
      ErrorCodes.INVALID_CONFIGURATION,
    );
    expect(error.message).toContain(missing);
    const garbage = path.join(dir, "garbage.onnx");
    await writeFile(garbage, "not a model at all");
    await expectCode(createOnnxBackgroundRemover(base(garbage)), ErrorCodes.INVALID_CONFIGURATION);
    await expectCode(
      createOnnxBackgroundRemover(base(new Uint8Array([1, 2, 3]))),
      ErrorCodes.INVALID_CONFIGURATION,
    );
  });

  it("rejects models and options that do not fit a segmentation model", async () => {
    const model = channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH });
    const cases: Array<[OnnxBackgroundRemoverOptions, string]> = [
      [base(channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH, channels: 1 })), "3 (RGB) channels"],
      [{ ...base(model), inputName: "nope" }, 'no input "nope" (inputs: image)'],
      [{ ...base(model), outputName: "nope" }, 'no output "nope" (outputs: mask)'],
      [{ ...base(model), concurrency: 0 }, "concurrency"],
      [{ ...base(model), std: [1, 0, 1] }, "std"],
      [{ ...base(channelModel({ layout: "nchw", height: "h", width: "w" })), inputWidth: 5 }, "inputWidth"],
    ];
    for (const [options, message] of cases) {
      const error = await expectCode(createOnnxBackgroundRemover(options), ErrorCodes.INVALID_CONFIGURATION);
      expect(error.message).toContain(message);
    }
  });

  it("answers MODEL_BAD_RESPONSE for an output that is not a one-channel map", async () => {
    const remover = await createOnnxBackgroundRemover(
      base(channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH, count: 2 })),
    );
    const error = await expectCode(
      remover.remove({ image: await image(gradient), width: WIDTH, height: HEIGHT }),
      ErrorCodes.MODEL_BAD_RESPONSE,
    );
    expect(error.message).toContain("[1, 2, 30, 40]");
    await remover.close();
  });

  it("rejects a size that does not match the bytes, garbage bytes, an aborted signal, and calls after close", async () => {
    const remover = await createOnnxBackgroundRemover(
      base(channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH })),
    );
    const input = await image(gradient);
    await expectCode(remover.remove({ image: input, width: WIDTH + 1, height: HEIGHT }), ErrorCodes.INTERNAL);
    await expectCode(
      remover.remove({ image: new Uint8Array([9, 9, 9, 9]), width: 2, height: 2 }),
      ErrorCodes.INVALID_IMAGE,
    );
    const aborted = AbortSignal.abort(new Error("client gone"));
    await expect(
      remover.remove({ image: input, width: WIDTH, height: HEIGHT }, { signal: aborted }),
    ).rejects.toThrow("client gone");
    await remover.close();
    await expectCode(
      remover.remove({ image: input, width: WIDTH, height: HEIGHT }),
      ErrorCodes.MODEL_UNAVAILABLE,
    );
  });
});

describe("the inference process's malloc settings", () => {
  it("adds huge pages and a fixed mmap threshold to GLIBC_TUNABLES, keeping what the host set", () => {
    expect(inferenceEnv({ PATH: "/bin" })).toEqual({
      PATH: "/bin",
      GLIBC_TUNABLES: "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=131072",
    });
    expect(inferenceEnv({ GLIBC_TUNABLES: "glibc.malloc.arena_max=2" }).GLIBC_TUNABLES).toBe(
      "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=131072",
    );
    // The host's own choice of either wins.
    expect(inferenceEnv({ GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=1048576" }).GLIBC_TUNABLES).toBe(
      "glibc.malloc.mmap_threshold=1048576:glibc.malloc.hugetlb=1",
    );
    const both = { GLIBC_TUNABLES: "glibc.malloc.hugetlb=0:glibc.malloc.mmap_threshold=65536" };
    expect(inferenceEnv(both)).toBe(both);
  });

  it("starts the inference process with them", async () => {
    const remover = await createOnnxBackgroundRemover({
      model: channelModel({ layout: "nchw", height: HEIGHT, width: WIDTH }),
      ...identity,
    });
    try {
      const [pid] = childProcesses({ cmdline: "inference-process" });
      expect(pid).toBeDefined();
      // The raw environment block: glibc writes a NUL after each tunable's value as it parses
      // GLIBC_TUNABLES at start, so the variable reads as its first tunable only, the rest
      // following as separate entries; both are still in the block, in the order they were passed.
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8");
      const tunables = inferenceEnv(process.env).GLIBC_TUNABLES!.split(":");
      expect(tunables).toEqual(expect.arrayContaining(["glibc.malloc.mmap_threshold=131072"]));
      expect(environment).toContain(`GLIBC_TUNABLES=${tunables.join("\0")}\0`);
    } finally {
      await remover.close();
    }
  });
});
