import { describe, expect, it } from "vitest";
import { DEFAULT_DELIVERY_QUALITY, deliveryOptionsSchema } from "../src/operations/deliver-variant.js";

describe("delivery.defaultQuality", () => {
  it("defaults to the per-format table, AVIF below JPEG and WebP", () => {
    const { defaultQuality } = deliveryOptionsSchema.parse({});
    expect(defaultQuality).toEqual(DEFAULT_DELIVERY_QUALITY);
    expect(defaultQuality.avif).toBeLessThan(defaultQuality.jpeg);
  });

  it("takes one number for every format (as before), or some formats over the defaults", () => {
    expect(deliveryOptionsSchema.parse({ defaultQuality: 70 }).defaultQuality).toEqual({
      jpeg: 70,
      webp: 70,
      avif: 70,
      png: 70,
      gif: 70,
      tiff: 70,
    });
    expect(deliveryOptionsSchema.parse({ defaultQuality: { avif: 50 } }).defaultQuality).toEqual({
      ...DEFAULT_DELIVERY_QUALITY,
      avif: 50,
    });
  });

  it("refuses qualities outside 1..100 and unknown formats", () => {
    expect(deliveryOptionsSchema.safeParse({ defaultQuality: 0 }).success).toBe(false);
    expect(deliveryOptionsSchema.safeParse({ defaultQuality: { avif: 101 } }).success).toBe(false);
    expect(deliveryOptionsSchema.safeParse({ defaultQuality: { heic: 50 } }).success).toBe(false);
  });
});
