import { variantUrl } from "@pixport/url-signer";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { CODECS, call, decode, isClose, newKey, pixel, quadrants, upload, useServer } from "./harness.js";

const SECRET = "bytes-delivery-secret-0123456789";
const RED = [255, 0, 0];
const WHITE = [255, 255, 255];

describe.each(CODECS)("variant delivery sends no more pixels than the source has (%s)", (codec) => {
  const running = useServer({ codec, delivery: { signingKeys: [SECRET] } });
  let key: string;
  let imageId: string;
  const get = async (modifiers: string[], ext = "png", headers: Record<string, string> = {}) =>
    call(
      running.url,
      "GET",
      await variantUrl({ base: running.url, secret: SECRET, imageId, modifiers, ext: ext as never }),
      {
        headers,
      },
    );

  beforeAll(async () => {
    key = await newKey(running.server, "live", `bytes-${codec}`);
    // 400 x 300 quadrants: red, green / blue, white.
    imageId = (await upload(running.url, key, await quadrants(400, 300), "quadrants")).id;
    expect((await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
  });

  it("w_ wider than the source answers the source's size, keeping the aspect ratio", async () => {
    for (const modifiers of [["w_1600"], ["h_900"], ["w_300", "dpr_3"]]) {
      const answer = await get(modifiers);
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      const raw = await decode(answer.bytes);
      expect([raw.width, raw.height], modifiers.join(",")).toEqual([400, 300]);
      expect(isClose(pixel(raw, 20, 20), RED, 10)).toBe(true);
      expect(isClose(pixel(raw, 380, 280), WHITE, 10)).toBe(true);
    }
  });

  it("a fit_cover box larger than the source shrinks to fit it, keeping the box's aspect ratio", async () => {
    const cover = await decode((await get(["w_1600", "h_400", "fit_cover"])).bytes);
    expect([cover.width, cover.height]).toEqual([400, 100]);
    const fill = await decode((await get(["w_800", "h_800", "fit_fill"])).bytes);
    expect([fill.width, fill.height]).toEqual([300, 300]);
    const inside = await decode((await get(["w_1000", "h_2000", "fit_inside"])).bytes);
    expect([inside.width, inside.height]).toEqual([400, 300]);
    // A box within the source is unchanged.
    const small = await decode((await get(["w_200", "h_200", "fit_cover"])).bytes);
    expect([small.width, small.height]).toEqual([200, 200]);
  });

  it("enlarge_1 asks for the larger size; it is a signed modifier like the others", async () => {
    const enlarged = await get(["w_800", "enlarge_1"]);
    expect(enlarged.status).toBe(200);
    const raw = await decode(enlarged.bytes);
    expect([raw.width, raw.height]).toEqual([800, 600]);
    const plain = await get(["w_800"]);
    expect(plain.bytes.byteLength).toBeLessThan(enlarged.bytes.byteLength);
    // The signature covers enlarge_1: the same signature without it, or with it added, fails.
    const signed = await variantUrl({
      base: running.url,
      secret: SECRET,
      imageId,
      modifiers: ["w_800"],
      ext: "png",
    });
    const forged = signed.replace("/w_800.png", "/enlarge_1,w_800.png");
    expect((await call(running.url, "GET", forged)).status).toBe(403);
  });

  it("enlarge_ takes only 1, and the 10,000 px cap still holds with it", async () => {
    const bad = await get(["w_800", "enlarge_2"]);
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.json)).toContain("enlarge_2");
    const huge = await get(["w_6000", "dpr_2", "enlarge_1"]);
    expect(huge.status).toBe(422);
  });

  it("the stored-image resize still enlarges (the contract's behaviour)", async () => {
    const resized = await call(running.url, "POST", `/v1/images/${imageId}/resize`, {
      key,
      json: { width: 800 },
    });
    expect(resized.status, JSON.stringify(resized.json)).toBe(201);
    const body = resized.json as { width: number; height: number };
    expect([body.width, body.height]).toEqual([800, 600]);
  });

  it("a JPEG source upscaled by w_ is no longer a bigger file than the source", async () => {
    const jpeg = new Uint8Array(
      await sharp(await quadrants(300, 200))
        .jpeg({ quality: 90 })
        .toBuffer(),
    );
    const id = (await upload(running.url, key, jpeg, "quadrants-jpeg")).id;
    expect((await call(running.url, "POST", `/v1/images/${id}/publish`, { key })).status).toBe(201);
    const answer = await call(
      running.url,
      "GET",
      await variantUrl({ base: running.url, secret: SECRET, imageId: id, modifiers: ["w_1200"], ext: "jpg" }),
    );
    expect(answer.status).toBe(200);
    const raw = await decode(answer.bytes);
    expect([raw.width, raw.height]).toEqual([300, 200]);
  });
});
