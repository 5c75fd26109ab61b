import { readFileSync } from "node:fs";
import { encodeAnimation, photoCorpus } from "@pixport/testing";
import sharp from "sharp";
import { ssim } from "ssim.js";
import { beforeAll, describe, expect, it } from "vitest";
import { CODECS, call, newKey, shownPixels, upload, useServer, variantGetter } from "./harness.js";

const SECRET = "auto-delivery-secret-0123456789";
const MODERN = "image/avif,image/webp";
/**
 * The lowest SSIM (ssim.js, against the server's own lossless PNG of the same variant, on black)
 * `auto` may answer with: the default qualities are calibrated to JPEG q80's median SSIM, and no
 * image of the corpus falls further below it than this in any format at its default.
 */
const TARGET_SSIM = 0.9;

const pixels = shownPixels;

/** Whether some pixel of `bytes` is not fully opaque. */
async function transparent(bytes: Uint8Array): Promise<boolean> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  for (let index = 3; index < data.length; index += info.channels) if (data[index]! < 255) return true;
  return false;
}

describe.each(CODECS)("auto answers the smallest acceptable format (%s)", (codec) => {
  const running = useServer({ codec, delivery: { signingKeys: [SECRET] } });
  let key: string;
  const published = async (bytes: Uint8Array, name: string): Promise<string> => {
    const { id } = await upload(running.url, key, bytes, name);
    expect((await call(running.url, "POST", `/v1/images/${id}/publish`, { key })).status).toBe(201);
    return id;
  };
  const get = variantGetter(running, SECRET);

  beforeAll(async () => {
    key = await newKey(running.server, "live", `auto-${codec}`);
  });

  it("is never larger than the WebP choice on any photograph of the corpus, at the target SSIM", async () => {
    const chosen = new Set<string>();
    for (const photo of photoCorpus()) {
      const imageId = await published(readFileSync(photo.path), photo.file);
      // The default qualities (AVIF mostly wins), and one q_ for every format (WebP mostly wins:
      // AVIF at q80 is the larger file).
      for (const modifiers of [["w_320"], ["q_80", "w_160"]]) {
        const what = `${photo.file} ${modifiers.join(",")}`;
        const auto = await get(imageId, modifiers, "auto", MODERN);
        expect(auto.status, `${what} ${JSON.stringify(auto.json)}`).toBe(200);
        expect(auto.headers.get("vary"), what).toBe("Accept");
        const webp = await get(imageId, modifiers, "webp");
        expect(webp.headers.get("content-type")).toBe("image/webp");
        expect(auto.bytes.byteLength, what).toBeLessThanOrEqual(webp.bytes.byteLength);
        const reference = await pixels((await get(imageId, modifiers, "png")).bytes);
        const score = ssim(reference, await pixels(auto.bytes)).mssim;
        expect(score, `${what} as ${auto.headers.get("content-type")}`).toBeGreaterThanOrEqual(TARGET_SSIM);
        chosen.add(auto.headers.get("content-type")!);
      }
    }
    // Neither format by rule: each answer is the smaller of the two.
    expect([...chosen].sort()).toEqual(["image/avif", "image/webp"]);
  }, 900_000);

  it("caches the choice per Accept class: the same bytes on a HIT, also for another Accept of the class", async () => {
    const [photo] = photoCorpus().filter((entry) => entry.kind === "portrait");
    const imageId = await published(readFileSync(photo!.path), "cached");
    const first = await get(imageId, ["w_200"], "auto", MODERN);
    expect(first.headers.get("x-cache")).toBe("MISS");
    const again = await get(imageId, ["w_200"], "auto", MODERN);
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(Buffer.from(again.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    const sameClass = await get(imageId, ["w_200"], "auto", "image/webp,image/avif;q=0.9,image/*,*/*;q=0.8");
    expect(sameClass.headers.get("x-cache")).toBe("HIT");
    expect(Buffer.from(sameClass.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    // Another class is another variant: a browser without AVIF or WebP gets the source's format.
    const older = await get(imageId, ["w_200"], "auto", "image/png,*/*");
    expect(older.headers.get("x-cache")).toBe("MISS");
    expect(older.headers.get("vary")).toBe("Accept");
    expect(["image/png", "image/jpeg"]).toContain(older.headers.get("content-type"));
  });

  it("keeps a transparent source transparent in whatever format it chooses", async () => {
    const clear = await sharp({
      create: { width: 300, height: 200, channels: 4, background: { r: 0, g: 90, b: 255, alpha: 0.4 } },
    })
      .png()
      .toBuffer();
    // A photograph with a transparent border, so lossy formats have detail to spend bytes on.
    const [portrait] = photoCorpus().filter((entry) => entry.kind === "portrait");
    const framed = await sharp(readFileSync(portrait!.path))
      .resize(240)
      .extend({ top: 30, bottom: 30, left: 30, right: 30, background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .png()
      .toBuffer();
    for (const [name, bytes] of [
      ["clear", clear],
      ["framed", framed],
    ] as const) {
      const imageId = await published(bytes, name);
      for (const accept of [MODERN, "image/webp", "*/*"]) {
        const answer = await get(imageId, ["w_120"], "auto", accept);
        expect(answer.status).toBe(200);
        expect(await transparent(answer.bytes), `${name} for ${accept}`).toBe(true);
      }
    }
  });

  it("keeps an animated source animated", async () => {
    const frames = [0, 1, 2].map((index) => {
      const data = new Uint8Array(64 * 48 * 4);
      for (let offset = 0; offset < data.length; offset += 4)
        data.set([index * 120, 200 - index * 60, 40, 255], offset);
      return { data, width: 64, height: 48 };
    });
    const imageId = await published(await encodeAnimation(frames, "gif"), "animated");
    for (const accept of [MODERN, "*/*"]) {
      const answer = await get(imageId, ["w_32"], "auto", accept);
      expect(answer.status).toBe(200);
      const metadata = await sharp(answer.bytes, { animated: true }).metadata();
      expect(metadata.pages, `${accept}: ${answer.headers.get("content-type")}`).toBe(3);
    }
  });
});
