import { resolve, Tokens } from "@pixport/container";
import {
  declaredSizeBomb,
  encodeAnimation,
  hugeCanvasAnimatedWebp,
  manyFramesGif,
  manyPagesTiff,
  paintPixels,
} from "@pixport/testing";
import sharp from "sharp";
import { thumbHashToRGBA } from "thumbhash";
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  CODECS,
  call,
  decode,
  isClose,
  mean,
  newKey,
  pixel,
  quadrants,
  upload,
  useServer,
} from "./harness.js";

type Rgb = [number, number, number];
const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];
const WHITE: Rgb = [255, 255, 255];
const rgba = ([r, g, b]: Rgb, alpha = 1) => ({ r, g, b, alpha });

/** Quadrants (red, green / blue, yellow) in `format`. */
async function quadrantsAs(format: "avif" | "gif" | "tiff", width = 80, height = 60): Promise<Uint8Array> {
  const png = Buffer.from(await quadrants(width, height));
  if (format === "avif")
    return sharp(png).avif({ quality: 90, chromaSubsampling: "4:4:4", effort: 1 }).toBuffer();
  if (format === "gif") return sharp(png).gif({ dither: 0 }).toBuffer();
  return sharp(png).tiff({ compression: "lzw" }).toBuffer();
}

/** A 3-frame animation: the left half red, green, then blue; the right half white. */
function threeFrames(format: "gif" | "webp"): Promise<Uint8Array> {
  const white = rgba([255, 255, 255]);
  return encodeAnimation(
    [RED, GREEN, BLUE].map((color) => paintPixels(60, 40, (x) => (x < 30 ? rgba(color) : white))),
    format,
    { delays: [100, 200, 300], loop: 0 },
  );
}

/** Every frame of an encoded animation, with its delays. */
async function frames(bytes: Uint8Array) {
  const metadata = await sharp(bytes, { pages: -1 }).metadata();
  const { data, info } = await sharp(bytes, { pages: -1 }).raw().toBuffer({ resolveWithObject: true });
  const height = metadata.pageHeight ?? info.height;
  const count = Math.round(info.height / height);
  const size = info.width * height * info.channels;
  const list = Array.from({ length: count }, (_, index) => ({
    data: data.subarray(index * size, (index + 1) * size),
    width: info.width,
    height,
    channels: info.channels,
  }));
  return { format: metadata.format, list, delay: metadata.delay };
}

describe.each(CODECS)("modern formats over HTTP (%s)", (codec) => {
  const running = useServer({ codec });
  let key: string;
  beforeAll(async () => {
    key = await newKey(running.server, "live", `formats-${codec}`);
  });

  for (const format of ["avif", "gif", "tiff"] as const) {
    it(`uploads, transforms, converts and downloads ${format} with its pixels`, async () => {
      const created = await upload(running.url, key, await quadrantsAs(format), format);
      expect(created).toMatchObject({ format, width: 80, height: 60 });
      const mirrored = await call(running.url, "POST", `/v1/images/${created.id}/mirror`, {
        key,
        json: { mode: "horizontal" },
      });
      expect(mirrored.status, JSON.stringify(mirrored.json)).toBe(201);
      expect(mirrored.json.format).toBe(format);
      const download = await call(running.url, "GET", `/v1/images/${mirrored.json.id}/download`, { key });
      expect(download.status).toBe(200);
      expect(download.headers.get("content-type")).toBe(`image/${format}`);
      expect((await sharp(download.bytes).metadata()).format).toBe(format === "avif" ? "heif" : format);
      const raw = await decode(download.bytes);
      // Mirrored: green top-left, red top-right.
      expect(isClose(pixel(raw, 10, 10), GREEN, 40), `${pixel(raw, 10, 10)}`).toBe(true);
      expect(isClose(pixel(raw, 70, 10), RED, 40)).toBe(true);
      expect(isClose(pixel(raw, 70, 50), BLUE, 40)).toBe(true);

      // And from jpeg to the format with convert.
      const jpeg = await upload(running.url, key, await quadrants(80, 60, "jpeg"), "jpeg");
      const converted = await call(running.url, "POST", `/v1/images/${jpeg.id}/convert`, {
        key,
        json: { format, quality: 80 },
      });
      expect(converted.status, JSON.stringify(converted.json)).toBe(201);
      expect(converted.json.format).toBe(format);
      const bytes = (await call(running.url, "GET", `/v1/images/${converted.json.id}/download`, { key }))
        .bytes;
      const back = await decode(bytes);
      expect(isClose(pixel(back, 10, 10), RED, 45)).toBe(true);
      expect(isClose(pixel(back, 70, 50), WHITE, 45)).toBe(true);
    });
  }

  it("keeps an animated GIF's 3 frames and delays through resize, mirror and rotate", async () => {
    const created = await upload(running.url, key, await threeFrames("gif"), "anim");
    expect(created).toMatchObject({ format: "gif", width: 60, height: 40 });
    const steps = [
      { op: "resize", width: 30 },
      { op: "mirror", mode: "horizontal" },
      { op: "rotate", angle: 90 },
    ];
    const made = await call(running.url, "POST", `/v1/images/${created.id}/transform`, {
      key,
      json: { steps },
    });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    expect(made.json).toMatchObject({ format: "gif", width: 20, height: 30 });
    const result = await frames(
      (await call(running.url, "GET", `/v1/images/${made.json.id}/download`, { key })).bytes,
    );
    expect(result.list).toHaveLength(3);
    expect(result.delay).toEqual([100, 200, 300]);
    // Mirrored then turned clockwise: the coloured half ends at the bottom.
    for (const [index, image] of result.list.entries()) {
      expect(isClose(pixel(image, 10, 25), [RED, GREEN, BLUE][index]!, 60), `frame ${index}`).toBe(true);
      expect(isClose(pixel(image, 10, 4), [255, 255, 255], 60)).toBe(true);
    }
    const metadata = await call(running.url, "GET", `/v1/images/${made.json.id}/metadata`, { key });
    expect(metadata.json.frames).toBe(3);
  });

  it("converts an animated GIF to WebP and back with its frames where the codec animates WebP", async () => {
    const created = await upload(running.url, key, await threeFrames("gif"), "anim");
    const webp = await call(running.url, "POST", `/v1/images/${created.id}/convert`, {
      key,
      json: { format: "webp", quality: 90 },
    });
    if (codec === "jimp") {
      // jimp's WebP build has no animation: refused, never a silently cut image.
      expect(webp.status).toBe(422);
      expect(webp.json.code).toBe("UNSUPPORTED_OPERATION");
      expect(webp.json.errors[0]).toMatch(/^format webp would keep 1 of this animation's 3 frames/);
      return;
    }
    expect(webp.status, JSON.stringify(webp.json)).toBe(201);
    const back = await call(running.url, "POST", `/v1/images/${webp.json.id}/convert`, {
      key,
      json: { format: "gif" },
    });
    expect(back.status).toBe(201);
    const result = await frames(
      (await call(running.url, "GET", `/v1/images/${back.json.id}/download`, { key })).bytes,
    );
    expect(result.format).toBe("gif");
    expect(result.list).toHaveLength(3);
    expect(result.delay).toEqual([100, 200, 300]);
    for (const [index, image] of result.list.entries()) {
      expect(isClose(pixel(image, 10, 20), [RED, GREEN, BLUE][index]!, 60)).toBe(true);
    }
  });

  it("writes the first frame when an animation is converted to a still format", async () => {
    const created = await upload(running.url, key, await threeFrames("gif"), "anim");
    const png = await call(running.url, "POST", `/v1/images/${created.id}/convert`, {
      key,
      json: { format: "png" },
    });
    expect(png.status).toBe(201);
    const raw = await decode(
      (await call(running.url, "GET", `/v1/images/${png.json.id}/download`, { key })).bytes,
    );
    expect(isClose(pixel(raw, 10, 20), RED, 10)).toBe(true);
    expect((await call(running.url, "GET", `/v1/images/${png.json.id}/metadata`, { key })).json.frames).toBe(
      1,
    );
  });

  it("stamps the test mark on every frame of a test key's animation", async () => {
    const testKey = await newKey(running.server, "test", `formats-${codec}`);
    const created = await upload(running.url, testKey, await threeFrames("gif"), "anim");
    const result = await frames(
      (await call(running.url, "GET", `/v1/images/${created.id}/download`, { key: testKey })).bytes,
    );
    expect(result.list).toHaveLength(3);
    const clean = await frames(await threeFrames("gif"));
    for (const [index, image] of result.list.entries()) {
      // The mark changed every frame somewhere.
      const original = clean.list[index]!;
      let changed = 0;
      for (let offset = 0; offset < image.data.length; offset += image.channels) {
        if (Math.abs(image.data[offset]! - original.data[offset]!) > 40) changed += 1;
      }
      expect(changed, `frame ${index}`).toBeGreaterThan(20);
    }
  });

  it("keeps the detailed corner with position entropy and attention (fit cover)", async () => {
    // 300x100 flat grey with a 40x40 checkerboard near the right edge.
    const grey = rgba([128, 128, 128]);
    const input = await sharp(
      Buffer.from(
        paintPixels(300, 100, (x, y) =>
          x >= 250 && x < 290 && y >= 30 && y < 70
            ? ((x >> 2) + (y >> 2)) % 2 === 0
              ? rgba([0, 0, 0])
              : rgba([255, 255, 255])
            : grey,
        ).data,
      ),
      { raw: { width: 300, height: 100, channels: 4 } },
    )
      .png()
      .toBuffer();
    const created = await upload(running.url, key, input, "subject");
    for (const position of ["entropy", "attention"]) {
      const resized = await call(running.url, "POST", `/v1/images/${created.id}/resize`, {
        key,
        json: { width: 100, height: 100, fit: "cover", position },
      });
      expect(resized.status, JSON.stringify(resized.json)).toBe(201);
      const raw = await decode(
        (await call(running.url, "GET", `/v1/images/${resized.json.id}/download`, { key })).bytes,
      );
      const values = new Set<number>();
      for (let y = 0; y < raw.height; y += 2)
        for (let x = 0; x < raw.width; x += 2) values.add(pixel(raw, x, y)[0]!);
      expect(Math.max(...values) - Math.min(...values), `${position} keeps the checkerboard`).toBeGreaterThan(
        200,
      );
    }
    const refused = await call(running.url, "POST", `/v1/images/${created.id}/resize`, {
      key,
      json: { width: 100, height: 100, fit: "contain", position: "entropy" },
    });
    expect(refused.status).toBe(422);
    expect(refused.json.errors).toEqual(["position entropy needs fit cover with both width and height"]);
  });

  it("answers metadata: dominant colour, alpha, frames and a ThumbHash that decodes to the picture", async () => {
    const half = rgba([20, 200, 60]);
    const translucent = await sharp(
      Buffer.from(paintPixels(120, 80, (x) => (x < 90 ? half : rgba([0, 0, 255], 0.5))).data),
      { raw: { width: 120, height: 80, channels: 4 } },
    )
      .png()
      .toBuffer();
    const created = await upload(running.url, key, translucent, "meta");
    const response = await call(running.url, "GET", `/v1/images/${created.id}/metadata`, { key });
    expect(response.status).toBe(200);
    // Not billed: the monthly count is what the upload made it.
    expect(response.headers.get("x-image-processing-usage")).toBe(
      (await call(running.url, "GET", `/v1/images/${created.id}`, { key })).headers.get(
        "x-image-processing-usage",
      ),
    );
    const body = response.json;
    expect(Object.keys(body)).toEqual([
      "id",
      "width",
      "height",
      "format",
      "size",
      "has_alpha",
      "frames",
      "dominant_color",
      "thumbhash",
      "blurhash",
    ]);
    expect(body).toMatchObject({ id: created.id, width: 120, height: 80, format: "png", size: created.size });
    expect(body.has_alpha).toBe(true);
    expect(body.frames).toBe(1);
    const dominant = [1, 3, 5].map((start) =>
      Number.parseInt(body.dominant_color.slice(start, start + 2), 16),
    );
    expect(isClose(dominant, [20, 200, 60], 16), body.dominant_color).toBe(true);
    expect(body.blurhash).toMatch(/^[0-9A-Za-z#$%*+,\-.:;=?@[\]^_{|}~]{28}$/);
    // The ThumbHash decodes (with the package's own decoder) to a picture close to a downscale.
    const hashed = thumbHashToRGBA(Buffer.from(body.thumbhash, "base64"));
    const hashedRaw = { data: Buffer.from(hashed.rgba), width: hashed.w, height: hashed.h, channels: 4 };
    const left = mean(hashedRaw, 0, 0, Math.floor(hashed.w * 0.6), hashed.h);
    expect(isClose(left.slice(0, 3), [20, 200, 60], 45), `${left}`).toBe(true);
    expect(left[3]).toBeGreaterThan(200);
    const right = mean(hashedRaw, Math.ceil(hashed.w * 0.85), 0, hashed.w, hashed.h);
    expect(right[3], "the translucent strip stays translucent").toBeLessThan(215);

    const opaque = await upload(running.url, key, await quadrants(40, 40), "opaque");
    const opaqueFacts = (await call(running.url, "GET", `/v1/images/${opaque.id}/metadata`, { key })).json;
    expect(opaqueFacts.has_alpha).toBe(false);
  });

  it("computes a new image's facts in the background, without a metadata request", async () => {
    const created = await upload(running.url, key, await quadrants(40, 40), "background");
    const images = resolve(running.server.container, Tokens.ImageRepository);
    await vi.waitFor(
      async () => expect((await images.get(created.id))?.facts?.thumbhash).toEqual(expect.any(String)),
      {
        timeout: 10_000,
        interval: 50,
      },
    );
    expect((await images.get(created.id))?.facts).toMatchObject({ hasAlpha: false, frames: 1 });
  });

  it("computes and stores the facts of a record made before they existed, on first request", async () => {
    const created = await upload(running.url, key, await quadrants(40, 40), "old");
    const images = resolve(running.server.container, Tokens.ImageRepository);
    const { facts: _facts, ...old } = (await images.get(created.id))!;
    await images.delete(created.id);
    await images.insert(old);
    expect((await images.get(created.id))?.facts).toBeUndefined();
    const response = await call(running.url, "GET", `/v1/images/${created.id}/metadata`, { key });
    expect(response.status).toBe(200);
    expect(response.json.thumbhash).toEqual(expect.any(String));
    expect((await images.get(created.id))?.facts?.thumbhash).toBe(response.json.thumbhash);
  });

  it("keeps metadata to the owner: 404 unknown, 403 another account's, 422 a malformed id", async () => {
    const created = await upload(running.url, key, await quadrants(20, 20), "mine");
    const other = await newKey(running.server, "live", `formats-other-${codec}`);
    expect((await call(running.url, "GET", `/v1/images/${created.id}/metadata`, { key: other })).status).toBe(
      403,
    );
    expect(
      (await call(running.url, "GET", "/v1/images/image_aaaaaaaaaaaaaaaaaaaaaaaa/metadata", { key })).status,
    ).toBe(404);
    expect((await call(running.url, "GET", "/v1/images/nope/metadata", { key })).status).toBe(422);
    expect((await call(running.url, "GET", `/v1/images/${created.id}/metadata`)).status).toBe(401);
  });

  it("refuses AVIF, GIF and TIFF bombs from their headers, with the process's memory staying flat", async () => {
    const bombs: [string, Uint8Array, RegExp][] = [
      ["avif", await declaredSizeBomb("avif"), /megapixels \(received 60000 x 60000\)$/],
      ["gif", await declaredSizeBomb("gif"), /megapixels \(received 60000 x 60000\)$/],
      ["tiff", await declaredSizeBomb("tiff"), /megapixels \(received 60000 x 60000\)$/],
      [
        "gif of 10,000 frames",
        manyFramesGif(10_000),
        /at most 200 frames or pages \(received 10000 frames of 1 x 1\)$/,
      ],
      [
        "tiff of 1,000 pages",
        await manyPagesTiff(1_000),
        /at most 200 frames or pages \(received 1000 frames of 8 x 8\)$/,
      ],
      // From an attack campaign: a tiny animated WebP on a 7000x7000 canvas (147 megapixels in 3 frames).
      [
        "animated webp 7000x7000",
        await hugeCanvasAnimatedWebp(7_000, 3),
        /megapixels in all its frames together \(received 3 frames of 7000 x 7000\)$/,
      ],
    ];
    const before = process.memoryUsage().rss;
    for (const [name, bytes, message] of bombs) {
      const response = await call(running.url, "POST", "/v1/images/upload", {
        key,
        form: (() => {
          const form = new FormData();
          form.append("name", name.slice(0, 30));
          form.append("image", new Blob([bytes]), "bomb");
          return form;
        })(),
      });
      expect(response.status, name).toBe(422);
      expect(response.json.code, name).toBe("IMAGE_TOO_LARGE");
      expect(response.json.errors[0], name).toMatch(message);
    }
    // A decoded 60000 x 60000 frame alone would be 10.8 GB; the header checks cost next to nothing.
    const growth = process.memoryUsage().rss - before;
    expect(growth, `RSS grew by ${Math.round(growth / 1e6)} MB`).toBeLessThan(64 * 1024 * 1024);
  });
});
