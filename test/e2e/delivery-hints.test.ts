import { readFileSync } from "node:fs";
import { photoCorpus } from "@pixport/testing";
import { variantUrl } from "@pixport/url-signer";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { CODECS, call, newKey, upload, useServer } from "./harness.js";

const SECRET = "hints-delivery-secret-0123456789";
const HINTS = "Sec-CH-Width, Width, Sec-CH-DPR, DPR";

describe.each(CODECS)("w_auto takes its width from client hints (%s)", (codec) => {
  const running = useServer({ codec, delivery: { signingKeys: [SECRET] } });
  let imageId: string;
  let sourceWidth: number;
  const get = async (modifiers: string[], headers: Record<string, string> = {}, ext = "png") =>
    call(
      running.url,
      "GET",
      await variantUrl({ base: running.url, secret: SECRET, imageId, modifiers, ext: ext as never }),
      { headers },
    );
  const widthOf = async (bytes: Uint8Array) => (await sharp(bytes).metadata()).width;

  beforeAll(async () => {
    const key = await newKey(running.server, "live", `hints-${codec}`);
    const [portrait] = photoCorpus().filter((entry) => entry.kind === "portrait");
    const bytes = readFileSync(portrait!.path);
    sourceWidth = (await sharp(bytes).metadata()).width;
    imageId = (await upload(running.url, key, bytes, "hinted")).id;
    expect((await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
  });

  it("uses Sec-CH-Width or Width, else the fallback times the DPR hint, rounded up to 100 px, with Vary and Accept-CH", async () => {
    const cases: [Record<string, string>, number][] = [
      [{}, 200],
      [{ "sec-ch-width": "250" }, 300],
      [{ width: "330" }, 400],
      [{ "sec-ch-width": "120", width: "480" }, 200],
      [{ "sec-ch-dpr": "2" }, 400],
      [{ dpr: "1.5" }, 300],
      // A hint that is not a number is ignored, never refused.
      [{ "sec-ch-width": "wide" }, 200],
    ];
    for (const [headers, width] of cases) {
      const answer = await get(["w_auto:200"], headers);
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      expect(await widthOf(answer.bytes), JSON.stringify(headers)).toBe(width);
      expect(answer.headers.get("vary")).toBe(HINTS);
      expect(answer.headers.get("accept-ch")).toBe(HINTS);
    }
  });

  it("never goes above the source's width, and without a hint or fallback answers the source's width", async () => {
    const wide = await get(["w_auto:200"], { "sec-ch-width": "5000" });
    expect(await widthOf(wide.bytes)).toBe(sourceWidth);
    const bare = await get(["w_auto"]);
    expect(await widthOf(bare.bytes)).toBe(sourceWidth);
    expect(bare.headers.get("vary")).toBe(HINTS);
  });

  it("caches per snapped width: another hint of the same step is a HIT with the same bytes", async () => {
    const first = await get(["w_auto:100"], { "sec-ch-width": "151" });
    expect(first.headers.get("x-cache")).toBe("MISS");
    const second = await get(["w_auto:100"], { "sec-ch-width": "199" });
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    const other = await get(["w_auto:100"], { "sec-ch-width": "201" });
    expect(other.headers.get("x-cache")).toBe("MISS");
    expect(await widthOf(other.bytes)).toBe(300);
  });

  it("varies by Accept and the hints together with auto; a fixed width varies by neither but still asks for hints", async () => {
    const both = await get(["w_auto:200"], { accept: "image/webp", "sec-ch-width": "300" }, "auto");
    expect(both.headers.get("vary")).toBe(`Accept, ${HINTS}`);
    expect(both.headers.get("content-type")).toMatch(/^image\/(webp|png)$/);
    expect(await widthOf(both.bytes)).toBe(300);
    const fixed = await get(["w_200"], { "sec-ch-width": "300" });
    expect(await widthOf(fixed.bytes)).toBe(200);
    expect(fixed.headers.get("vary")).toBeNull();
    expect(fixed.headers.get("accept-ch")).toBe(HINTS);
  });

  it("refuses a bad fallback and h_ beside w_auto with a 422 naming the token", async () => {
    const bad = await get(["w_auto:0"]);
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.json)).toContain("w_auto:0");
    const withHeight = await get(["h_100", "w_auto:200"]);
    expect(withHeight.status).toBe(422);
    expect(JSON.stringify(withHeight.json)).toContain("h_100");
  });
});
