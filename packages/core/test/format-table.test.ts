import { describe, expect, it } from "vitest";
import {
  acceptedFormats,
  BROWSER_FORMATS,
  FILE_EXTENSIONS,
  formatFromSpelling,
  formatHasAlpha,
  formatList,
  formatSpellings,
  MIME_TYPES,
} from "../src/adapter-kit.js";
import { FORMAT_TABLE, IMAGE_FORMATS } from "../src/index.js";
import { signedUrlSchema } from "../src/operations/deliver-variant.js";
import { convertSchema } from "../src/schemas.js";

describe("the format table", () => {
  it("lists the contract's three formats first, then the ones pixport adds", () => {
    expect(IMAGE_FORMATS).toEqual(["jpeg", "png", "webp", "avif", "gif", "tiff"]);
    expect(Object.keys(FORMAT_TABLE)).toEqual(IMAGE_FORMATS);
  });

  it("derives media types, extensions and alpha from its rows", () => {
    expect(MIME_TYPES).toEqual({
      jpeg: "image/jpeg",
      png: "image/png",
      webp: "image/webp",
      avif: "image/avif",
      gif: "image/gif",
      tiff: "image/tiff",
    });
    expect(FILE_EXTENSIONS).toEqual({
      jpeg: "jpg",
      png: "png",
      webp: "webp",
      avif: "avif",
      gif: "gif",
      tiff: "tiff",
    });
    expect(IMAGE_FORMATS.filter((format) => !formatHasAlpha(format))).toEqual(["jpeg"]);
  });

  it("reads every spelling back to its format, and nothing else", () => {
    expect(formatSpellings(IMAGE_FORMATS)).toEqual(["jpeg", "png", "webp", "avif", "gif", "tiff", "jpg"]);
    expect(formatSpellings(["jpeg"])).toEqual(["jpeg", "jpg"]);
    for (const format of IMAGE_FORMATS) {
      expect(formatFromSpelling(format)).toBe(format);
      expect(formatFromSpelling(FILE_EXTENSIONS[format])).toBe(format);
    }
    for (const foreign of ["tif", "JPG", "heic", "svg", "", "json"])
      expect(formatFromSpelling(foreign)).toBeNull();
  });

  it("keeps the contract's words first in messages", () => {
    expect(formatList(IMAGE_FORMATS)).toBe("jpeg, png, webp, avif, gif or tiff");
    expect(acceptedFormats("file")).toBe("a jpeg, png or webp file (or avif, gif or tiff)");
  });

  it("feeds the request schemas: convert takes every spelling, variants the browser formats", () => {
    for (const spelling of formatSpellings(IMAGE_FORMATS)) {
      expect(convertSchema.parse({ format: spelling }).format).toBe(formatFromSpelling(spelling));
    }
    expect(convertSchema.safeParse({ format: "tif" }).success).toBe(false);
    expect(BROWSER_FORMATS).toEqual(["jpeg", "png", "webp", "avif", "gif"]);
    expect(signedUrlSchema.shape.format.unwrap().options).toEqual([
      "jpeg",
      "jpg",
      "png",
      "webp",
      "avif",
      "gif",
      "auto",
    ]);
  });
});
