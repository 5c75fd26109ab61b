import { beforeAll, describe, expect, it } from "vitest";
import {
  CODECS,
  call,
  decode,
  halves,
  ID,
  IMAGE_KEYS,
  isClose,
  newKey,
  photo,
  pixel,
  upload,
  useServer,
} from "./harness.js";

const RED: [number, number, number] = [255, 0, 0];
const BLUE: [number, number, number] = [0, 0, 255];

describe.each(CODECS)("POST /v1/images/{image_id}/transform (%s)", (codec) => {
  const running = useServer({ codec });
  let key: string;
  let halvesId: string;
  beforeAll(async () => {
    key = await newKey(running.server, "live", `fused-${codec}`, { trial: true });
    halvesId = (await upload(running.url, key, await halves(200, 100, RED, BLUE), "halves")).id;
  });

  it("runs resize then rotate 90 in one call: the left half ends on top; billed once, one new image", async () => {
    const used = async () => (await running.server.pipeline.usage(`fused-${codec}`)).images;
    const before = await used();
    const response = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: {
        name: "fused",
        steps: [
          { op: "resize", width: 100 },
          { op: "rotate", angle: 90 },
          { op: "convert", format: "webp", quality: 90 },
        ],
      },
    });
    expect(response.status, JSON.stringify(response.json)).toBe(201);
    expect(Object.keys(response.json)).toEqual(IMAGE_KEYS);
    expect(response.json).toMatchObject({ name: "fused", width: 50, height: 100, format: "webp" });
    expect(response.json.id).toMatch(ID);
    expect(response.headers.get("x-image-processing-usage")).toBe("1");
    expect(await used()).toBe(before + 1);
    const raw = await decode(
      (await call(running.url, "GET", `/v1/images/${response.json.id}/download`, { key })).bytes,
    );
    // Clockwise: the left (red) half is on top, the right (blue) half below.
    expect(isClose(pixel(raw, 25, 15), RED, 30)).toBe(true);
    expect(isClose(pixel(raw, 25, 85), BLUE, 30)).toBe(true);
  });

  it("checks a crop against the image the previous steps made, and names the step of every error", async () => {
    const cropped = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: {
        steps: [
          { op: "resize", width: 50 },
          { op: "crop", x1: 0, y1: 0, x2: 50, y2: 25 },
        ],
      },
    });
    expect(cropped.status).toBe(201);
    expect([cropped.json.width, cropped.json.height]).toEqual([50, 25]);
    const bad = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: {
        steps: [
          { op: "resize", width: 0 },
          { op: "sharpen", sigma: 2 },
          { op: "crop", x1: 0, y1: 0, x2: 10 },
          { op: "blur", sigma: 5, name: "inner" },
        ],
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.json).toMatchObject({ status: 422, error: "Validation Error", code: "VALIDATION_FAILED" });
    expect(bad.json.errors).toEqual([
      "steps.0.width must be an integer between 1 and 10000",
      "steps.1.op must be one of: resize, crop, rotate, mirror, modulate, blur, watermark, convert",
      "steps.2.y2 is required",
      "steps.3.name is not allowed in a step; name the result at the top level",
    ]);
    const outside = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: {
        steps: [
          { op: "resize", width: 50 },
          { op: "crop", x1: 0, y1: 0, x2: 60, y2: 10 },
        ],
      },
    });
    expect(outside.status).toBe(422);
    expect(outside.json.errors).toEqual(["steps.1.x2 must be at most the image width (50)"]);
    const tooMany = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: { steps: Array.from({ length: 11 }, () => ({ op: "mirror", mode: "both" })) },
    });
    expect(tooMany.json.errors).toEqual(["steps must be an array of 1 to 10 steps"]);
    const huge = await call(running.url, "POST", `/v1/images/${halvesId}/transform`, {
      key,
      json: {
        steps: [
          { op: "resize", width: 10_000 },
          { op: "rotate", angle: 45 },
        ],
      },
    });
    expect(huge.status).toBe(422);
    expect(huge.json.errors).toEqual([
      expect.stringMatching(/^steps\.1\.angle must result in an image of at most/),
    ]);
  });

  it("stamps the test mark once, however many steps", async () => {
    const testKey = await newKey(running.server, "test", `fused-test-${codec}`);
    const source = await upload(running.url, testKey, await halves(120, 80, RED, BLUE), "src");
    const run = async (path: string, json: unknown) => {
      const response = await call(running.url, "POST", `/v1/images/${path}`, { key: testKey, json });
      expect(response.status, JSON.stringify(response.json)).toBe(201);
      expect(response.headers.get("x-image-processing-usage")).toBe("0");
      return decode(
        (await call(running.url, "GET", `/v1/images/${response.json.id}/download`, { key: testKey })).bytes,
      );
    };
    // Mirroring both ways twice is the identity: the fused result differs from the source only by
    // one more stamp of the mark, exactly as a single (step-less) convert does.
    const fused = await run(`${source.id}/transform`, {
      steps: [
        { op: "mirror", mode: "both" },
        { op: "mirror", mode: "both" },
        { op: "convert", format: "png" },
      ],
    });
    const once = await run(`${source.id}/convert`, { format: "png" });
    const first = await call(running.url, "POST", `/v1/images/${source.id}/mirror`, {
      key: testKey,
      json: { mode: "both" },
    });
    const twice = await run(`${first.json.id}/mirror`, { mode: "both" });
    const difference = (a: typeof fused, b: typeof fused) => {
      let total = 0;
      for (let index = 0; index < a.data.length; index++) total += Math.abs(a.data[index]! - b.data[index]!);
      return total / a.data.length;
    };
    expect(difference(fused, once)).toBeLessThan(1);
    // Two single operations stamp twice, which shows.
    expect(difference(twice, once)).toBeGreaterThan(difference(fused, once) + 0.5);
  });
});

describe.each(CODECS)("colours with transparency on a JPEG output (%s)", (codec) => {
  const running = useServer({ codec });

  it("answer 422 naming the field instead of silently painting them opaque; png and a convert keep them", async () => {
    const key = await newKey(running.server, "live", `alpha-${codec}`);
    const jpeg = await upload(running.url, key, await photo(60, 40), "photo");
    const rotate = await call(running.url, "POST", `/v1/images/${jpeg.id}/rotate`, {
      key,
      json: { angle: 30, background_color: "transparent" },
    });
    expect(rotate.status).toBe(422);
    expect(rotate.json.errors).toEqual([
      "background_color must be an opaque colour for a jpeg image (jpeg has no transparency): convert to png or webp first (or end a transform with a convert to one of them) to keep transparency",
    ]);
    const letterbox = await call(running.url, "POST", `/v1/images/${jpeg.id}/resize`, {
      key,
      json: { width: 80, height: 80, fit: "contain", letterbox_color: "#ff000080" },
    });
    expect(letterbox.status).toBe(422);
    expect(letterbox.json.errors[0]).toMatch(/^letterbox_color must be an opaque colour for a jpeg image/);
    // Opaque colours still work on JPEG, and a transform that ends in PNG keeps transparency.
    expect(
      (
        await call(running.url, "POST", `/v1/images/${jpeg.id}/rotate`, {
          key,
          json: { angle: 30, background_color: "#00ff00" },
        })
      ).status,
    ).toBe(201);
    const kept = await call(running.url, "POST", `/v1/images/${jpeg.id}/transform`, {
      key,
      json: {
        steps: [
          { op: "rotate", angle: 30, background_color: "transparent" },
          { op: "convert", format: "png" },
        ],
      },
    });
    expect(kept.status).toBe(201);
    const raw = await decode(
      (await call(running.url, "GET", `/v1/images/${kept.json.id}/download`, { key })).bytes,
    );
    expect(raw.channels).toBe(4);
    expect(raw.data[3]).toBe(0); // the top-left corner is transparent
  });
});
