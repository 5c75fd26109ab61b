import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { ImageCodec } from "@pixport/core";
import { pipelineContext } from "@pixport/core/internal";
import { sign, signedPath, variantUrl } from "@pixport/url-signer";
import sharp from "sharp";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { CODECS, call, decode, isClose, newKey, pixel, quadrants, upload, useServer } from "./harness.js";

const KEY_NEW = "new-delivery-secret-0123456789";
const KEY_OLD = "old-delivery-secret-0123456789";
const RED = [255, 0, 0];
const GREEN = [0, 255, 0];
const BLUE = [0, 0, 255];

/** Counts the codec's transforms (the delivery path reads `context.codec` at call time). */
function countTransforms(context: { codec: ImageCodec }): { readonly count: number } {
  const codec = context.codec;
  let count = 0;
  context.codec = {
    ...codec,
    capabilities: codec.capabilities,
    transform: (request) => {
      count += 1;
      return codec.transform(request);
    },
  };
  return {
    get count() {
      return count;
    },
  };
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

describe.each(CODECS)("variant delivery (%s)", (codec) => {
  const running = useServer({
    codec,
    delivery: {
      signingKeys: [KEY_NEW, KEY_OLD],
      presets: { thumb: "w_40,h_40,fit_cover" },
      cacheBytes: 400_000,
    },
  });
  let key: string;
  let imageId: string;
  const url = (modifiers: string[], ext = "png", secret = KEY_NEW) =>
    variantUrl({ base: running.url, secret, imageId, modifiers, ext: ext as never });
  const get = (target: string, headers: Record<string, string> = {}) =>
    call(running.url, "GET", target, { headers });

  beforeAll(async () => {
    key = await newKey(running.server, "live", `delivery-${codec}`);
    // Quadrants 400x300: red, green / blue, white.
    imageId = (await upload(running.url, key, await quadrants(400, 300), "quadrants")).id;
    expect((await call(running.url, "POST", `/v1/images/${imageId}/publish`, { key })).status).toBe(201);
  });

  it("w_200 is 200 px wide with the picture, then a HIT with the same strong ETag, and 304 on If-None-Match", async () => {
    const target = await url(["w_200"]);
    const first = await get(target);
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.headers.get("content-type")).toBe("image/png");
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect(first.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(first.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Number(first.headers.get("content-length"))).toBe(first.bytes.byteLength);
    const raw = await decode(first.bytes);
    expect([raw.width, raw.height]).toEqual([200, 150]);
    expect(isClose(pixel(raw, 20, 20), RED, 10)).toBe(true);
    expect(isClose(pixel(raw, 180, 20), GREEN, 10)).toBe(true);
    expect(isClose(pixel(raw, 20, 130), BLUE, 10)).toBe(true);
    const second = await get(target);
    expect(second.headers.get("x-cache")).toBe("HIT");
    const etag = second.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{32}-[0-9a-f]+"$/);
    // A hash of the bytes (not of the URL), and their length.
    const digest = createHash("sha256").update(first.bytes).digest("hex").slice(0, 32);
    expect(etag).toBe(`"${digest}-${first.bytes.byteLength.toString(16)}"`);
    expect(first.headers.get("etag")).toBe(etag);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    const notModified = await get(target, { "if-none-match": etag });
    expect(notModified.status).toBe(304);
    expect(notModified.bytes.byteLength).toBe(0);
    const head = await call(running.url, "HEAD", target);
    expect(head.status).toBe(200);
    expect(head.bytes.byteLength).toBe(0);
    expect(head.headers.get("content-length")).toBe(String(first.bytes.byteLength));
  });

  it("fit_cover fills the box, dpr_2 doubles, crop/rot/flip apply", async () => {
    const cover = await decode((await get(await url(["w_100", "h_100", "fit_cover"]))).bytes);
    expect([cover.width, cover.height]).toEqual([100, 100]);
    const inside = await decode((await get(await url(["w_100", "h_100", "fit_inside"]))).bytes);
    expect([inside.width, inside.height]).toEqual([100, 75]);
    const doubled = await decode((await get(await url(["w_100", "dpr_2"]))).bytes);
    expect([doubled.width, doubled.height]).toEqual([200, 150]);
    const flipped = await decode((await get(await url(["flip_h", "w_200"]))).bytes);
    expect(isClose(pixel(flipped, 20, 20), GREEN, 10)).toBe(true);
    const cropped = await decode((await get(await url(["crop_200:0:400:150"]))).bytes);
    expect([cropped.width, cropped.height]).toEqual([200, 150]);
    expect(isClose(pixel(cropped, 100, 75), GREEN, 10)).toBe(true);
    const turned = await decode((await get(await url(["rot_90", "w_150"]))).bytes);
    // Clockwise: the left column (red over blue) becomes the top row (blue, red).
    expect([turned.width, turned.height]).toEqual([150, 200]);
    expect(isClose(pixel(turned, 130, 20), RED, 10)).toBe(true);
  });

  it("auto answers the smallest of what Accept allows (AVIF, WebP, the source's own), with Vary: Accept", async () => {
    const target = await url(["w_120"], "auto");
    const sizes: Record<string, number> = {};
    for (const ext of ["avif", "webp"]) sizes[ext] = (await get(await url(["w_120"], ext))).bytes.byteLength;
    const formats: [string, string[]][] = [
      ["image/avif,image/webp,*/*", ["avif", "webp", "png"]],
      ["image/webp,*/*;q=0.8", ["webp", "png"]],
      ["*/*", ["png"]],
      ["image/avif;q=0,image/webp", ["webp", "png"]],
    ];
    for (const [accept, allowed] of formats) {
      const response = await get(target, { accept });
      expect(response.status).toBe(200);
      const type = response.headers.get("content-type")!;
      expect(
        allowed.map((format) => `image/${format}`),
        accept,
      ).toContain(type);
      // Never larger than an AVIF or WebP it could have answered.
      for (const format of allowed.filter((format) => format in sizes)) {
        expect(response.bytes.byteLength, `${accept} vs ${format}`).toBeLessThanOrEqual(sizes[format]!);
      }
      expect(response.headers.get("vary")).toBe("Accept");
      expect((await sharp(response.bytes).metadata()).width).toBe(120);
    }
    const jpeg = (await upload(running.url, key, await quadrants(80, 60, "jpeg"), "jpeg")).id;
    await call(running.url, "POST", `/v1/images/${jpeg}/publish`, { key });
    const jpegUrl = await variantUrl({
      base: running.url,
      secret: KEY_NEW,
      imageId: jpeg,
      modifiers: ["w_40"],
      ext: "auto",
    });
    expect((await get(jpegUrl, { accept: "*/*" })).headers.get("content-type")).toBe("image/jpeg");
    const clear = await sharp({
      create: { width: 40, height: 40, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } },
    })
      .webp({ lossless: true })
      .toBuffer();
    const transparent = (await upload(running.url, key, clear, "clear")).id;
    await call(running.url, "POST", `/v1/images/${transparent}/publish`, { key });
    const clearUrl = await variantUrl({
      base: running.url,
      secret: KEY_NEW,
      imageId: transparent,
      modifiers: ["w_20"],
      ext: "auto",
    });
    expect((await get(clearUrl, { accept: "image/jpeg,*/*" })).headers.get("content-type")).toBe("image/png");
  });

  it("checks signatures first: wrong, truncated and unknown-secret are 403; the rotated secret and reordered tokens work", async () => {
    const good = await url(["w_60", "h_30", "fit_fill"]);
    const [, , signature, ...rest] = new URL(good).pathname.split("/");
    const tail = rest.join("/");
    const flipped = `${signature!.slice(0, -1)}${signature!.endsWith("A") ? "B" : "A"}`;
    for (const bad of [
      flipped,
      signature!.slice(0, 20),
      await sign("another-secret-0123456789", signedPath(imageId, ["w_60", "h_30", "fit_fill"], "png")),
    ]) {
      const response = await get(`/v/${bad}/${tail}`);
      expect(response.status).toBe(403);
      expect(response.json.code).toBe("FORBIDDEN");
    }
    // Bad modifiers behind a bad signature: still the 403, no decoding.
    expect((await get(`/v/${flipped}/${imageId}/w_abc.png`)).status).toBe(403);
    const rotated = await get(await url(["w_60", "h_30", "fit_fill"], "png", KEY_OLD));
    expect(rotated.status).toBe(200);
    const first = await get(good);
    expect(first.status).toBe(200);
    // The same variant spelt in another order is the same signature and the same cache entry.
    const reordered = await sign(KEY_NEW, signedPath(imageId, ["fit_fill", "h_30", "w_60"], "png"));
    const again = await get(`/v/${reordered}/${imageId}/fit_fill,h_30,w_60.png`);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-cache")).toBe("HIT");
  });

  it("serves unsigned presets only, and names every bad token of a signed URL in one 422", async () => {
    const preset = await get(`/v/_/${imageId}/p_thumb.webp`);
    expect(preset.status, JSON.stringify(preset.json)).toBe(200);
    expect((await sharp(preset.bytes).metadata()).width).toBe(40);
    expect((await get(`/v/_/${imageId}/w_100.webp`)).status).toBe(403);
    const bad = await get(await url(["w_0", "fit_stretch", "q_500", "zoom_2"]));
    expect(bad.status).toBe(422);
    expect(bad.json.errors).toEqual([
      "fit_stretch must be one of: fill, contain, cover, inside",
      "q_500 must be an integer between 1 and 100",
      "w_0 must be an integer between 1 and 10000",
      "zoom_2 is not a modifier (w, h, fit, pos, dpr, q, rot, flip, blur, crop, bg, p, exp, enlarge)",
    ]);
    const tooWide = await get(await url(["w_6000", "dpr_2", "enlarge_1"]));
    expect(tooWide.status).toBe(422);
  });

  it("computes a variant once: a HIT never calls the codec, 50 concurrent misses call it once", async () => {
    const counter = countTransforms(pipelineContext(running.server.pipeline));
    const usage = () => running.server.pipeline.usage(`delivery-${codec}`);
    const counted = async () => (await usage()).variants;
    // The earlier tests' misses are counted without being awaited (onMiss), so the account's
    // counter can still move for a moment: read it once it has held still for half a second.
    let before = await counted();
    for (let still = 0, polls = 0; still < 5 && polls < 100; polls++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = await counted();
      still = now === before ? still + 1 : 0;
      before = now;
    }
    const billed = async () => (await usage()).images;
    const billedBefore = await billed();
    const target = await url(["w_77"]);
    const answers = await Promise.all(Array.from({ length: 50 }, () => get(target)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(counter.count).toBe(1);
    expect((await get(target)).headers.get("x-cache")).toBe("HIT");
    expect(counter.count).toBe(1);
    // Not billed, but counted per account: one computed variant.
    await vi.waitFor(async () => expect(await counted()).toBe(before + 1));
    expect(await billed()).toBe(billedBefore);
  });

  it("keeps the cache under delivery.cacheBytes", async () => {
    for (let width = 300; width < 340; width += 2)
      expect((await get(await url([`w_${width}`]))).status).toBe(200);
    const bytes = await dirBytes(path.join(running.dataDir, "blobs", "variants"));
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(400_000);
  });

  it("signed-url serves a private image until it expires; unpublish and delete end every variant", async () => {
    const id = (await upload(running.url, key, await quadrants(100, 100), "private")).id;
    const signed = await call(running.url, "POST", `/v1/images/${id}/signed-url`, {
      key,
      json: { modifiers: "w_50", format: "png", expires_in: 60 },
    });
    expect(signed.status, JSON.stringify(signed.json)).toBe(200);
    expect(Date.parse(signed.json.expires_at)).toBeGreaterThan(Date.now());
    const privately = await get(signed.json.url);
    expect(privately.status).toBe(200);
    expect(privately.headers.get("cache-control")).toMatch(/^private, max-age=(59|60)$/);
    // Without the expiry token, a private image is not served.
    expect(
      (
        await get(
          await variantUrl({
            base: running.url,
            secret: KEY_NEW,
            imageId: id,
            modifiers: ["w_50"],
            ext: "png",
          }),
        )
      ).status,
    ).toBe(404);
    const expired = await variantUrl({
      base: running.url,
      secret: KEY_NEW,
      imageId: id,
      modifiers: ["w_50"],
      ext: "png",
      expiresAt: new Date(Date.now() - 1000),
    });
    expect((await get(expired)).status).toBe(403);
    const other = await newKey(running.server, "live", `delivery-other-${codec}`);
    expect(
      (await call(running.url, "POST", `/v1/images/${id}/signed-url`, { key: other, json: {} })).status,
    ).toBe(403);
    expect(
      (await call(running.url, "POST", `/v1/images/${id}/signed-url`, { key, json: { expires_in: 0 } })).json
        .errors,
    ).toEqual(["expires_in must be between 1 and 604800 (7 days)"]);

    // Published: variants served; unpublish ends them at once; delete removes the files.
    const published = (await upload(running.url, key, await quadrants(100, 100), "pub")).id;
    await call(running.url, "POST", `/v1/images/${published}/publish`, { key });
    const variants = await Promise.all(
      [["w_30"], ["w_40"], ["w_50", "flip_v"]].map((modifiers) =>
        variantUrl({ base: running.url, secret: KEY_NEW, imageId: published, modifiers, ext: "png" }),
      ),
    );
    for (const target of variants) expect((await get(target)).status).toBe(200);
    const variantDir = path.join(running.dataDir, "blobs", "variants", published);
    expect((await readdir(variantDir)).length).toBe(3);
    await call(running.url, "POST", `/v1/images/${published}/unpublish`, { key });
    for (const target of variants) expect((await get(target)).status).toBe(404);
    expect(await readdir(variantDir).catch(() => [])).toEqual([]);
    // No empty folder is left behind either.
    expect(existsSync(variantDir)).toBe(false);
    const signedAgain = await call(running.url, "POST", `/v1/images/${published}/signed-url`, {
      key,
      json: { modifiers: "w_30" },
    });
    expect((await get(signedAgain.json.url)).status).toBe(200);
    expect((await readdir(variantDir)).length).toBe(1);
    expect((await call(running.url, "DELETE", `/v1/images/${published}`, { key })).status).toBe(204);
    expect((await get(signedAgain.json.url)).status).toBe(404);
    expect(existsSync(variantDir)).toBe(false);
  });
});
