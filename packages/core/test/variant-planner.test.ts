import { describe, expect, it } from "vitest";
import { createImagePipeline, ErrorCodes, type ImageRecord, type OriginSource } from "../src/index.js";
import { DEFAULT_LIMITS } from "../src/limits.js";
import type { PipelineContext } from "../src/operations/context.js";
import { deliveryOptionsSchema } from "../src/operations/deliver-variant.js";
import type { OriginalHeader } from "../src/operations/origin-originals.js";
import { createVariantPlanner, type PlannedUrl } from "../src/operations/variant-planner.js";
import { sha256Hex } from "../src/operations/variant-request.js";
import { type Extension, parseTokens } from "../src/operations/variant-url.js";
import { fake, fakeCodec, live, refusal } from "./fake-png.js";
import { memoryDeps } from "./memory-deps.js";

/** What planning reads of a pipeline: a codec writing `formats` and the default limits. */
function contextWriting(formats = ["png", "jpeg", "webp", "avif"]): PipelineContext {
  const { codec } = fakeCodec(["resize"]);
  const capabilities = { ...codec.capabilities, outputFormats: formats };
  return { codec: { ...codec, capabilities }, limits: DEFAULT_LIMITS } as unknown as PipelineContext;
}
const context = contextWriting();
const options = deliveryOptionsSchema.parse({});

/** The planned URL of `{modifiers}.{ext}` (no preset, no hints). */
function urlOf(file: string): PlannedUrl {
  const [modifiers = "", ext = ""] = file.split(".");
  const tokens = modifiers === "_" ? [] : modifiers.split(",");
  return { file, ext: ext as Extension, tokens, modifiers: parseTokens(tokens, {}) };
}

const record: ImageRecord = {
  id: "image_a",
  accountId: "a",
  stage: "live",
  name: "a",
  format: "png",
  width: 400,
  height: 300,
  size: 5000,
  createdAt: new Date(0).toISOString(),
  blobKey: "blobs/image_a.png",
  url: "https://cdn.test/image_a.png",
};
const stored = { imageId: record.id, record };

const header = (version: string): OriginalHeader => ({
  version,
  format: "png",
  width: 400,
  height: 300,
  frames: 1,
  size: 5000,
  freshSeconds: 60,
});

describe("the variant planner", () => {
  it("remembers a URL's plan and keys; another Accept or hinted width is planned again", async () => {
    const planned = createVariantPlanner(context, options);
    const first = await planned(urlOf("w_200.auto"), stored, "image/avif,image/webp");
    expect(await planned(urlOf("w_200.auto"), stored, "image/avif,image/webp")).toBe(first);
    const webpOnly = await planned(urlOf("w_200.auto"), stored, "image/webp");
    expect(webpOnly).not.toBe(first);
    expect(webpOnly.key).not.toBe(first.key);
    const hinted = await planned({ ...urlOf("w_200.auto"), hintedWidth: 200 }, stored, "image/webp");
    expect(hinted).not.toBe(webpOnly);
  });

  it("keeps only plans that passed: a refused URL takes no room and is refused again", async () => {
    const planned = createVariantPlanner(contextWriting(["png", "webp"]), options, 1);
    const kept = await planned(urlOf("w_200.webp"), stored, undefined);
    for (let i = 0; i < 2; i++) {
      const refused = await refusal(planned(urlOf("w_200.avif"), stored, undefined));
      expect([refused.code, refused.issues?.[0]?.message]).toEqual([
        ErrorCodes.VALIDATION_FAILED,
        "avif is not written by this server's codec",
      ]);
    }
    expect(await planned(urlOf("w_200.webp"), stored, undefined)).toBe(kept);
  });

  it("forgets the least recently used URL beyond its limit", async () => {
    const planned = createVariantPlanner(context, options, 2);
    const a = await planned(urlOf("w_100.webp"), stored, undefined);
    const b = await planned(urlOf("w_200.webp"), stored, undefined);
    expect(await planned(urlOf("w_100.webp"), stored, undefined)).toBe(a);
    await planned(urlOf("w_300.webp"), stored, undefined);
    expect(await planned(urlOf("w_100.webp"), stored, undefined)).toBe(a);
    const again = await planned(urlOf("w_200.webp"), stored, undefined);
    expect(again).not.toBe(b);
    expect(again.key).toBe(b.key);
  });

  it("keeps a stored image's variants under its id, keyed by the plan alone, planned again when its facts arrive", async () => {
    const planned = createVariantPlanner(context, options);
    // A WebP may have alpha: until its facts say it has none, auto falls back to PNG, then to WebP.
    const webp = { imageId: record.id, record: { ...record, format: "webp" as const } };
    const before = await planned(urlOf("w_200.auto"), webp, "image/webp");
    expect(before.cacheId).toBe(record.id);
    // Keys already cached by earlier releases stay hits: the identity's digest and the extension.
    expect(before.key).toBe(`${(await sha256Hex(before.plan.identity)).slice(0, 40)}.auto`);
    const facts = { hasAlpha: false, frames: 1, dominantColor: "#000000", thumbhash: null, blurhash: null };
    const after = await planned(
      urlOf("w_200.auto"),
      { ...webp, record: { ...webp.record, facts } },
      "image/webp",
    );
    expect([before.plan.fallback?.format, after.plan.fallback?.format]).toEqual(["png", "webp"]);
    expect(after.key).not.toBe(before.key);
    const withFacts = { imageId: record.id, record: { ...record, facts } };
    const fixed = await planned(urlOf("w_200.webp"), stored, undefined);
    const fixedWithFacts = await planned(urlOf("w_200.webp"), withFacts, undefined);
    expect(fixedWithFacts).not.toBe(fixed);
    expect(fixedWithFacts.key).toBe(fixed.key);
  });

  it("keeps an origin's variants under its path's digest, keyed by the plan and the original's version", async () => {
    const planned = createVariantPlanner(context, options);
    const source = (path: string, version: string) => ({ origin: "cms", path, header: header(version) });
    const v1 = await planned(urlOf("w_200.webp"), source("photos/a", "v1"), undefined);
    expect(v1.cacheId).toBe(`o/cms/${(await sha256Hex("cms\nphotos/a")).slice(0, 40)}`);
    expect(v1.key).toBe(`${(await sha256Hex(`${v1.plan.identity}|src=v1`)).slice(0, 40)}.webp`);
    expect(await planned(urlOf("w_200.webp"), source("photos/a", "v1"), undefined)).toBe(v1);
    const v2 = await planned(urlOf("w_200.webp"), source("photos/a", "v2"), undefined);
    expect([v2.cacheId, v2.plan.identity]).toEqual([v1.cacheId, v1.plan.identity]);
    expect(v2.key).not.toBe(v1.key);
    const other = await planned(urlOf("w_200.webp"), source("photos/b", "v1"), undefined);
    expect(other.cacheId).not.toBe(v1.cacheId);
    expect(other.key).toBe(v1.key);
  });
});

describe("remembered plans and expiring URLs", () => {
  it("refuses a stored image's and an origin's remembered URL once its exp_ has passed", async () => {
    let now = Date.UTC(2030, 0, 1);
    const clock = { now: () => new Date(now) };
    const origin: OriginSource = {
      kind: "fake",
      get: async () => ({ status: "found", data: fake(40, 20), validators: { etag: '"1"' } }),
    };
    const signer = {
      sign: async () => "ok",
      verify: async (_path: string, signature: string) => signature === "ok",
    };
    const { codec } = fakeCodec(["resize"]);
    const pipeline = createImagePipeline(
      memoryDeps(codec, { clock, origins: { cms: origin }, variantSigner: signer }),
      { delivery: { allowUnsigned: true } },
    );
    const image = await pipeline.uploadImage(live, { name: "a", image: fake(40, 20) });
    const exp = Math.floor(now / 1000) + 60;
    const storedAsk = { imageId: image.id, file: `exp_${exp},w_10.png`, signature: "_" };
    const originAsk = { signature: "ok", origin: "cms", modifiers: `exp_${exp},w_10`, path: "a.png" };
    expect((await pipeline.deliverVariant(storedAsk)).cache).toBe("MISS");
    expect((await pipeline.deliverVariant(storedAsk)).cache).toBe("HIT");
    expect((await pipeline.deliverOriginVariant(originAsk)).cache).toBe("MISS");
    expect((await pipeline.deliverOriginVariant(originAsk)).cache).toBe("HIT");
    now += 60_000;
    expect((await refusal(pipeline.deliverVariant(storedAsk))).code).toBe(ErrorCodes.FORBIDDEN);
    expect((await refusal(pipeline.deliverOriginVariant(originAsk))).code).toBe(ErrorCodes.FORBIDDEN);
  });
});
