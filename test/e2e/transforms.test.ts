import { beforeAll, describe, expect, it } from "vitest";
import {
  CODECS,
  call,
  decode,
  halves,
  ID,
  IMAGE_KEYS,
  isClose,
  mean,
  newKey,
  photo,
  pixel,
  quadrants,
  solid,
  upload,
  useServer,
} from "./harness.js";

let base: string;
let key: string;

describe.each(CODECS)("%s codec", (codec) => {
  const running = useServer({ codec });
  beforeAll(async () => {
    base = running.url;
    key = await newKey(running.server, "live", "pixels");
  });

  async function transform(id: string, operation: string, body: unknown) {
    const response = await call(base, "POST", `/v1/images/${id}/${operation}`, { key, json: body });
    expect(response.status, JSON.stringify(response.json)).toBe(201);
    expect(Object.keys(response.json)).toEqual(IMAGE_KEYS);
    expect(response.json.id).toMatch(ID);
    expect(response.json.id).not.toBe(id);
    expect(response.headers.get("x-image-processing-usage")).toBe("1");
    const download = await call(base, "GET", `/v1/images/${response.json.id}/download`, { key });
    return { image: response.json, raw: await decode(download.bytes), bytes: download.bytes };
  }

  const RED = [255, 0, 0];
  const BLUE = [0, 0, 255];

  describe("transforms through the prebuilt server", () => {
    let halvesId: string;
    let quadrantsId: string;
    beforeAll(async () => {
      halvesId = (await upload(base, key, await halves(100, 50, [255, 0, 0], [0, 0, 255]), "halves")).id;
      quadrantsId = (await upload(base, key, await quadrants(200, 100), "quadrants")).id;
    });

    it("mirror horizontal moves the red left half to the right; the name is inherited", async () => {
      const { image, raw } = await transform(halvesId, "mirror", { mode: "horizontal" });
      expect(image).toMatchObject({ name: "halves", width: 100, height: 50, format: "png" });
      expect(isClose(pixel(raw, 10, 25), BLUE)).toBe(true);
      expect(isClose(pixel(raw, 90, 25), RED)).toBe(true);
    });

    it("mirror vertical swaps top and bottom; a given name overrides", async () => {
      const { image, raw } = await transform(quadrantsId, "mirror", { mode: "vertical", name: "flipped" });
      expect(image.name).toBe("flipped");
      expect(isClose(pixel(raw, 10, 10), BLUE)).toBe(true);
      expect(isClose(pixel(raw, 10, 90), RED)).toBe(true);
    });

    it("crop 0,0,100,50 gives the red top-left quadrant", async () => {
      const { image, raw } = await transform(quadrantsId, "crop", { x1: 0, y1: 0, x2: 100, y2: 50 });
      expect([image.width, image.height]).toEqual([100, 50]);
      expect(isClose(mean(raw), RED, 3)).toBe(true);
    });

    it("rotate 90 swaps width and height and turns clockwise", async () => {
      const { image, raw } = await transform(quadrantsId, "rotate", { angle: 90 });
      expect([image.width, image.height]).toEqual([100, 200]);
      // Clockwise: the top-left red quadrant ends up top-right; blue (bottom-left) ends up top-left.
      expect(isClose(pixel(raw, 90, 10), RED)).toBe(true);
      expect(isClose(pixel(raw, 10, 10), BLUE)).toBe(true);
    });

    it("rotate 45 grows the canvas and fills the corners with background_color", async () => {
      const { image, raw } = await transform(halvesId, "rotate", {
        angle: Math.PI / 4,
        unit: "radians",
        background_color: "#00ff00",
      });
      expect(image.width).toBeGreaterThan(100);
      expect(image.height).toBeGreaterThan(50);
      expect(isClose(pixel(raw, 1, 1), [0, 255, 0], 30)).toBe(true);
      expect(isClose(pixel(raw, image.width - 2, image.height - 2), [0, 255, 0], 30)).toBe(true);
    });

    it("rotate by a huge finite angle reduces it in its own unit (1e306 radians is not a 500)", async () => {
      const turns = 1e306 % (2 * Math.PI);
      const { image } = await transform(halvesId, "rotate", { angle: 1e306, unit: "radians" });
      const degrees = ((((turns * 180) / Math.PI) % 360) + 360) % 360;
      const radians = (degrees * Math.PI) / 180;
      // The canvas is the bounding box of the turned 100 x 50 image, whatever the reduced angle is.
      const width = Math.abs(100 * Math.cos(radians)) + Math.abs(50 * Math.sin(radians));
      expect(Math.abs(image.width - width)).toBeLessThanOrEqual(2);
      const big = await transform(halvesId, "rotate", { angle: -1e300 });
      expect(big.image.width).toBeGreaterThan(0);
    });

    it("resize fill stretches to exactly the box", async () => {
      const { image } = await transform(halvesId, "resize", { width: 30, height: 70 });
      expect([image.width, image.height]).toEqual([30, 70]);
    });

    it("resize with one dimension keeps the aspect ratio", async () => {
      const { image } = await transform(halvesId, "resize", { width: 40 });
      expect([image.width, image.height]).toEqual([40, 20]);
    });

    it("resize contain letterboxes with letterbox_color and honours position", async () => {
      const { image, raw } = await transform(halvesId, "resize", {
        width: 100,
        height: 100,
        fit: "contain",
        position: "top",
        letterbox_color: "yellow",
      });
      expect([image.width, image.height]).toEqual([100, 100]);
      expect(isClose(pixel(raw, 10, 10).slice(0, 3), RED)).toBe(true);
      expect(isClose(pixel(raw, 50, 90).slice(0, 3), [255, 255, 0])).toBe(true);
    });

    it("resize cover crops the overflow and keeps the part position asks for", async () => {
      const left = await transform(halvesId, "resize", {
        width: 50,
        height: 50,
        fit: "cover",
        position: "left",
      });
      expect(isClose(mean(left.raw), RED, 10)).toBe(true);
      const right = await transform(halvesId, "resize", {
        width: 50,
        height: 50,
        fit: "cover",
        position: "right",
      });
      expect(isClose(mean(right.raw), BLUE, 10)).toBe(true);
    });

    it("blur lowers the contrast across an edge", async () => {
      const sharpEdge = await decode(
        (await call(base, "GET", `/v1/images/${halvesId}/download`, { key })).bytes,
      );
      const { raw } = await transform(halvesId, "blur", { sigma: 5 });
      const contrast = (image: typeof raw) => Math.abs(pixel(image, 48, 25)[0]! - pixel(image, 51, 25)[0]!);
      expect(contrast(raw)).toBeLessThan(contrast(sharpEdge) / 2);
    });

    it("modulate moves each statistic in the right direction", async () => {
      const grey = (await upload(base, key, await solid(40, 40, [100, 120, 140]), "grey")).id;
      const baseline = mean(
        await decode((await call(base, "GET", `/v1/images/${grey}/download`, { key })).bytes),
      );
      const luminance = (values: number[]) => 0.299 * values[0]! + 0.587 * values[1]! + 0.114 * values[2]!;
      const spread = (values: number[]) => Math.max(...values.slice(0, 3)) - Math.min(...values.slice(0, 3));
      const brighter = mean((await transform(grey, "modulate", { brightness: 40 })).raw);
      const darker = mean((await transform(grey, "modulate", { brightness: -40 })).raw);
      expect(luminance(brighter)).toBeGreaterThan(luminance(baseline) + 5);
      expect(luminance(darker)).toBeLessThan(luminance(baseline) - 5);
      expect(luminance(mean((await transform(grey, "modulate", { exposure: 50 })).raw))).toBeGreaterThan(
        luminance(baseline) + 5,
      );
      expect(luminance(mean((await transform(grey, "modulate", { lightness: 30 })).raw))).toBeGreaterThan(
        luminance(baseline) + 5,
      );
      expect(spread(mean((await transform(grey, "modulate", { saturation: 100 })).raw))).toBeGreaterThan(
        spread(baseline) + 5,
      );
      expect(spread(mean((await transform(grey, "modulate", { saturation: -100 })).raw))).toBeLessThan(5);
      const hueShifted = mean((await transform(halvesId, "modulate", { hue: 120 })).raw, 0, 0, 40, 50);
      // Red rotated by 120 degrees is no longer dominated by its red channel.
      expect(hueShifted[0]!).toBeLessThan(Math.max(hueShifted[1]!, hueShifted[2]!));
      const contrasted = await transform(halvesId, "modulate", { contrast: 50 });
      const reduced = await transform(halvesId, "modulate", { contrast: -50 });
      const channelGap = (raw: typeof contrasted.raw) => pixel(raw, 10, 25)[0]! - pixel(raw, 90, 25)[0]!;
      expect(channelGap(reduced.raw)).toBeLessThan(channelGap(contrasted.raw));
    });

    it("watermark draws the overlay at left/top with the requested size, and repeat tiles it", async () => {
      const canvas = (await upload(base, key, await solid(120, 80, [255, 255, 255]), "canvas")).id;
      const mark = (await upload(base, key, await solid(10, 10, [0, 0, 0]), "mark")).id;
      const once = await transform(canvas, "watermark", {
        watermarks: [{ id: mark, left: 30, top: 20, width: 20, height: 10 }],
      });
      expect(once.image.name).toBe("canvas");
      expect(isClose(pixel(once.raw, 35, 25), [0, 0, 0])).toBe(true);
      expect(isClose(pixel(once.raw, 49, 29), [0, 0, 0])).toBe(true);
      expect(isClose(pixel(once.raw, 51, 25), [255, 255, 255])).toBe(true);
      expect(isClose(pixel(once.raw, 35, 31), [255, 255, 255])).toBe(true);
      const tiled = await transform(canvas, "watermark", {
        watermarks: [{ id: mark, left: 0, top: 0, width: 5, height: 5, repetition_mode: "repeat" }],
      });
      expect(isClose(pixel(tiled.raw, 2, 2), [0, 0, 0])).toBe(true);
      expect(isClose(pixel(tiled.raw, 112, 72), [0, 0, 0])).toBe(true);
      const clipped = await transform(canvas, "watermark", { watermarks: [{ id: mark, left: -5, top: -5 }] });
      expect(isClose(pixel(clipped.raw, 2, 2), [0, 0, 0])).toBe(true);
      expect(isClose(pixel(clipped.raw, 7, 7), [255, 255, 255])).toBe(true);
    });

    it("convert changes the format, maps jpg to jpeg and honours quality", async () => {
      const source = (await upload(base, key, await photo(320, 240), "photo")).id;
      const high = await transform(source, "convert", { format: "jpg", quality: 95 });
      const low = await transform(source, "convert", { format: "jpeg", quality: 20 });
      expect(high.image.format).toBe("jpeg");
      expect(low.image.size).toBeLessThan(high.image.size);
      const webp = await transform(source, "convert", { format: "webp" });
      expect(webp.image.format).toBe("webp");
      expect(new TextDecoder().decode(webp.bytes.subarray(8, 12))).toBe("WEBP");
      const png = await transform(source, "convert", { format: "png" });
      expect([...png.bytes.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47]);
    });
  });
});
