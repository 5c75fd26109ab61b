import { describe, expect, it } from "vitest";
import { createImagePipeline, ErrorCodes, type OriginSource } from "../src/index.js";
import { originSettingsSchema } from "../src/operations/origin-url.js";
import { AUTO_QUALITY_TARGETS } from "../src/operations/quality-levels.js";
import { fake, fakeCodec, refusal } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

/** An origin of 400x300 images, behind a pipeline without a signer: only unsigned URLs can pass. */
function unsignedOrigin(qualities: unknown[]) {
  const { codec, calls } = fakeCodec(["resize"]);
  codec.capabilities.autoQuality = ["webp"];
  const source: OriginSource = {
    kind: "fake",
    get: async () => ({ status: "found", data: fake(400, 300), validators: { etag: '"1"' } }),
  };
  const pipeline = createImagePipeline(memoryDeps(codec, { origins: { cms: source } }), {
    delivery: {
      origins: { cms: { unsigned: { widths: [200], qualities: qualities as never, formats: ["webp"] } } },
    },
  });
  const get = (modifiers: string) =>
    pipeline.deliverOriginVariant({ signature: "_", origin: "cms", modifiers, path: "a.png.webp" });
  return { get, calls };
}

const forbiddenBy = async (answer: Promise<unknown>) => {
  const error = await refusal(answer);
  expect(error.code).toBe(ErrorCodes.FORBIDDEN);
  return error.message;
};

describe("the unsigned allow-list of an origin", () => {
  it("takes numbers 1..100, auto and auto:{level} as qualities, and refuses anything else naming the entry", () => {
    const parse = (qualities: unknown[]) =>
      originSettingsSchema.safeParse({ unsigned: { widths: [200], qualities } });
    expect(parse([1, 75, 100, "auto", "auto:good", "auto:best", "auto:eco"]).success).toBe(true);
    expect(parse([]).success).toBe(true);
    const refused: [unknown, RegExp][] = [
      [0, />=1/],
      [101, /<=100/],
      ...[7.5, "75", "auto:", "auto:great", "q_auto", null].map((wrong): [unknown, RegExp] => [
        wrong,
        /^must be an integer between 1 and 100, auto or auto:\{level\} \(a level of good, best, eco\)$/,
      ]),
    ];
    for (const [wrong, message] of refused) {
      const parsed = parse([80, wrong]);
      expect(parsed.success, String(wrong)).toBe(false);
      expect(parsed.error?.issues.map((issue) => issue.path.join("."))).toEqual(["unsigned.qualities.1"]);
      expect(parsed.error?.issues[0]?.message).toMatch(message);
    }
  });

  it("numbers only: answers q_{n} as listed and refuses q_auto at every level", async () => {
    const { get } = unsignedOrigin([75]);
    expect((await get("q_75,w_200")).cache).toBe("MISS");
    for (const quality of ["q_auto", "q_auto:good", "q_auto:best", "q_auto:eco", "q_80"]) {
      expect(await forbiddenBy(get(`${quality},w_200`))).toContain(`${quality} is not allowed`);
    }
  });

  it('"auto" allows q_auto and q_auto:good, one variant, and no other level', async () => {
    const { get, calls } = unsignedOrigin(["auto"]);
    const first = await get("q_auto,w_200");
    expect(first.cache).toBe("MISS");
    expect(calls.at(-1)!.output.autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.good.webp);
    expect((await get("q_auto:good,w_200")).cache).toBe("HIT");
    expect(calls).toHaveLength(1);
    await forbiddenBy(get("q_auto:best,w_200"));
    await forbiddenBy(get("q_auto:eco,w_200"));
    await forbiddenBy(get("q_75,w_200"));
    // The allow-list does not loosen the rest: a width is still needed, and only a listed one.
    await forbiddenBy(get("q_auto"));
    await forbiddenBy(get("q_auto,w_100"));
  });

  it('"auto:{level}" allows that level; "auto:good" allows q_auto as well', async () => {
    const { get, calls } = unsignedOrigin([60, "auto:good", "auto:eco"]);
    expect((await get("q_auto:eco,w_200")).cache).toBe("MISS");
    expect(calls.at(-1)!.output.autoQuality?.ssim).toBe(AUTO_QUALITY_TARGETS.eco.webp);
    expect((await get("q_auto,w_200")).cache).toBe("MISS");
    expect((await get("q_auto:good,w_200")).cache).toBe("HIT");
    expect((await get("q_60,w_200")).cache).toBe("MISS");
    await forbiddenBy(get("q_auto:best,w_200"));
    // A malformed level is refused like any token off the list (403 before any parsing).
    await forbiddenBy(get("q_auto:,w_200"));
    await forbiddenBy(get("q_auto:ECO,w_200"));
  });
});
