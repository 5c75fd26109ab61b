import { variantUrl } from "@pixport/url-signer";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CODECS,
  call,
  decode,
  isClose,
  newKey,
  photo,
  pixel,
  quadrants,
  upload,
  useServer,
} from "./harness.js";

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

describe.each(CODECS)("a format/quality-only variant is never larger than the original (%s)", (codec) => {
  const running = useServer({ codec, delivery: { signingKeys: [SECRET] } });
  let imageId: string;
  let original: Uint8Array;
  const get = async (modifiers: string[], ext: string, headers: Record<string, string> = {}) =>
    call(
      running.url,
      "GET",
      await variantUrl({ base: running.url, secret: SECRET, imageId, modifiers, ext: ext as never }),
      { headers },
    );

  beforeAll(async () => {
    const key = await newKey(running.server, "live", `bytes-original-${codec}`);
    imageId = (await upload(running.url, key, await photo(320, 240), "photo")).id;
    const published = await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key });
    expect(published.status).toBe(201);
    original = (await call(running.url, "GET", (published.json as { url: string }).url)).bytes;
    expect(original.byteLength).toBeGreaterThan(1000);
  });

  it("q_100 of a JPEG as .jpg answers the stored JPEG's bytes, also on the cache HIT", async () => {
    const first = await get(["q_100"], "jpg");
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(first.bytes).equals(Buffer.from(original))).toBe(true);
    const again = await get(["q_100"], "jpg");
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(again.headers.get("content-type")).toBe("image/jpeg");
    expect(Buffer.from(again.bytes).equals(Buffer.from(original))).toBe(true);
  });

  it("auto answers the original JPEG (with Vary: Accept) when the WebP would be larger", async () => {
    const answer = await get(["q_100"], "auto", { accept: "image/webp,*/*" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("image/jpeg");
    expect(answer.headers.get("vary") ?? "").toMatch(/accept/i);
    expect(Buffer.from(answer.bytes).equals(Buffer.from(original))).toBe(true);
  });

  it("a smaller result is still the variant; an explicit other format or any geometry is never the original", async () => {
    const smaller = await get(["q_20"], "jpg");
    expect(smaller.headers.get("content-type")).toBe("image/jpeg");
    expect(smaller.bytes.byteLength).toBeLessThan(original.byteLength);
    const webp = await get(["q_100"], "webp");
    expect(webp.headers.get("content-type")).toBe("image/webp");
    expect(webp.bytes.byteLength).toBeGreaterThan(original.byteLength);
    const resized = await get(["q_100", "w_319"], "jpg");
    expect((await decode(resized.bytes)).width).toBe(319);
    expect(Buffer.from(resized.bytes).equals(Buffer.from(original))).toBe(false);
  });
});

describe.each(CODECS)("default quality per output format (%s)", (codec) => {
  const configured = useServer({ codec, delivery: { signingKeys: [SECRET], defaultQuality: { avif: 40 } } });
  const plain = useServer({ codec, delivery: { signingKeys: [SECRET] } });
  const ids = new Map<string, string>();
  const get = async (server: { url: string }, modifiers: string[], ext: string) => {
    const answer = await call(
      server.url,
      "GET",
      await variantUrl({
        base: server.url,
        secret: SECRET,
        imageId: ids.get(server.url)!,
        modifiers,
        ext: ext as never,
      }),
    );
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    return answer.bytes;
  };

  beforeAll(async () => {
    for (const server of [configured, plain]) {
      const key = await newKey(server.server, "live", `bytes-quality-${codec}`);
      const id = (await upload(server.url, key, await photo(320, 240), "photo")).id;
      expect((await call(server.url, "POST", `/v1/images/${id}/publish`, { key })).status).toBe(201);
      ids.set(server.url, id);
    }
  });

  const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

  it("without q_, each format uses its own default (AVIF 62, WebP 82, JPEG 80); a given q_ wins", async () => {
    const avif = await get(plain, ["w_200"], "avif");
    expect(same(avif, await get(plain, ["w_200", "q_62"], "avif"))).toBe(true);
    expect(same(avif, await get(plain, ["w_200", "q_80"], "avif"))).toBe(false);
    expect(same(await get(plain, ["w_200"], "jpg"), await get(plain, ["w_200", "q_80"], "jpg"))).toBe(true);
    expect(same(await get(plain, ["w_200"], "webp"), await get(plain, ["w_200", "q_82"], "webp"))).toBe(true);
  });

  it("delivery.defaultQuality sets one format's default; the others keep theirs", async () => {
    const avif = await get(configured, ["w_200"], "avif");
    expect(same(avif, await get(configured, ["w_200", "q_40"], "avif"))).toBe(true);
    expect(
      same(await get(configured, ["w_200"], "jpg"), await get(configured, ["w_200", "q_80"], "jpg")),
    ).toBe(true);
  });
});
