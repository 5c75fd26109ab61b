import { describe, expect, it } from "vitest";
import { readImageHeader } from "../src/image-header.js";
import { DEFAULT_LIMITS, type ImageCodec, type ImageHeader, isImagePipelineError } from "../src/index.js";
import { probeInput } from "../src/operations/context.js";

/**
 * A real lossless WebP of 16383 x 16383 px of one colour, 38 bytes (made once with sharp:
 * `sharp({ create: { width: 16383, height: 16383, channels: 3, background: "#0ac81e" } })
 * .webp({ lossless: true, effort: 0 })`). libwebp's header read allocates its whole canvas.
 */
const LOSSLESS_16383 = Uint8Array.from(
  "52494646 1e000000 57454250 5650384c 11000000 2ffebfff 0f0750e4 2ad4a3ff 8188e87f 0000"
    .replace(/\s/g, "")
    .match(/../g)!
    .map((pair) => Number.parseInt(pair, 16)),
);

const le = (value: number, bytes: number) =>
  Array.from({ length: bytes }, (_, index) => (value >> (8 * index)) & 255);
const chunk = (type: string, body: number[]) => [
  ...[...type].map((character) => character.charCodeAt(0)),
  ...le(body.length, 4),
  ...body,
  ...(body.length & 1 ? [0] : []),
];
/** An animated WebP whose canvas is `side` x `side` with one 1 x 1 frame (the frame's bitstream is the one above). */
function animatedCanvas(side: number): Uint8Array {
  const frame = [...LOSSLESS_16383.subarray(12)];
  const body = [
    ..."WEBP".split("").map((character) => character.charCodeAt(0)),
    ...chunk("VP8X", [0x02, 0, 0, 0, ...le(side - 1, 3), ...le(side - 1, 3)]),
    ...chunk("ANIM", [0, 0, 0, 0, 0, 0]),
    ...chunk("ANMF", [...le(0, 3), ...le(0, 3), ...le(0, 3), ...le(0, 3), ...le(100, 3), 0, ...frame]),
  ];
  return Uint8Array.from([
    ..."RIFF".split("").map((character) => character.charCodeAt(0)),
    ...le(body.length, 4),
    ...body,
  ]);
}

/** A codec that only answers `probe`, counting its calls. */
function probingCodec(header: ImageHeader | null) {
  let probes = 0;
  const codec = {
    name: "probe-only",
    capabilities: {
      inputFormats: ["webp", "png", "jpeg", "gif"],
      outputFormats: ["webp"],
      animation: ["webp"],
    },
    probe: async () => {
      probes += 1;
      return header;
    },
  } as unknown as ImageCodec;
  return {
    codec,
    get probes() {
      return probes;
    },
  };
}

async function refusal(task: Promise<unknown>) {
  try {
    await task;
  } catch (error) {
    if (isImagePipelineError(error)) return { code: error.code, issues: error.issues };
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("the input limits are checked on the file's own header before the codec reads it", () => {
  it("reads what the files declare", () => {
    expect(readImageHeader(LOSSLESS_16383, "webp")).toMatchObject({ width: 16383, height: 16383 });
    expect(readImageHeader(animatedCanvas(16383), "webp")).toMatchObject({
      width: 16383,
      height: 16383,
      animated: true,
    });
  });

  it.each([
    ["a lossless WebP of 16383 x 16383", LOSSLESS_16383, "(received 16383 x 16383)"],
    ["an animated WebP with a 16383 x 16383 canvas", animatedCanvas(16383), "(received 16383 x 16383)"],
    ["an animated WebP with a 12000 x 12000 canvas", animatedCanvas(12000), "(received 12000 x 12000)"],
  ])("refuses %s without asking the codec", async (_name, bytes, received) => {
    const probing = probingCodec({ format: "webp", width: 1, height: 1 });
    const refused = await refusal(probeInput(probing.codec, bytes, DEFAULT_LIMITS, "image"));
    expect(refused.code).toBe("IMAGE_TOO_LARGE");
    expect(refused.issues).toEqual([
      { path: "image", message: `must be at most 10000 x 10000 pixels and 50 megapixels ${received}` },
    ]);
    expect(probing.probes).toBe(0);
  });

  it("asks the codec when the declared size is within the limits, and checks its answer too", async () => {
    const accepted = probingCodec({ format: "webp", width: 3000, height: 3000 });
    await expect(
      probeInput(accepted.codec, animatedCanvas(3000), DEFAULT_LIMITS, "image"),
    ).resolves.toMatchObject({
      width: 3000,
      frames: 1,
    });
    expect(accepted.probes).toBe(1);
    // A codec that reads a larger size than the header declared is still refused.
    const larger = probingCodec({ format: "webp", width: 20000, height: 20000 });
    const refused = await refusal(probeInput(larger.codec, animatedCanvas(3000), DEFAULT_LIMITS, "image"));
    expect(refused.code).toBe("IMAGE_TOO_LARGE");
    expect(larger.probes).toBe(1);
  });
});
