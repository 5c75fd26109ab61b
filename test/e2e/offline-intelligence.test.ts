import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import type { PixportServer } from "@pixport/server";
import {
  OCR_DOCUMENT_SUITE,
  parseMarkdownStructure,
  type RenderedDocument,
  renderDocument,
} from "@pixport/testing";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { CODECS, call, ID, IMAGE_KEYS, newKey, upload, useServer } from "./harness.js";

const WIDTH = 240;
const HEIGHT = 180;

/** A product shot: a red ellipse on a light vertical gradient (JPEG, as cameras write). */
async function productShot(): Promise<Uint8Array> {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3);
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      const inside = ((x - 120) / 50) ** 2 + ((y - 90) / 60) ** 2 <= 1;
      const shade = 215 + Math.round((y / HEIGHT) * 35);
      raw.set(inside ? [200, 30, 40] : [shade, shade, 255], (y * WIDTH + x) * 3);
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
      .jpeg({ quality: 92 })
      .toBuffer(),
  );
}

/**
 * A document image. Rendered before any server starts: the sharp codec blocks libvips' SVG loader
 * process-wide when it is created.
 */
async function documentImage(): Promise<Uint8Array> {
  const text = (y: number, size: number, value: string, weight = "normal") =>
    `<text x="40" y="${y}" font-size="${size}" font-weight="${weight}">${value}</text>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="700" height="330">
  <rect width="100%" height="100%" fill="white"/>
  <g font-family="DejaVu Sans" fill="black">
    ${text(70, 42, "Packing Notes", "bold")}
    ${text(130, 20, "Every parcel leaves the dock before noon.")}
    ${text(190, 20, "• Seal the boxes twice")}
    ${text(220, 20, "• Label every pallet")}
  </g></svg>`;
  return new Uint8Array(await sharp(Buffer.from(svg)).png().toBuffer());
}

let shot: Uint8Array;
let doc: Uint8Array;
/** Two suite documents at 2400 px wide (lists under a heading; a ruled table), as PNG. */
let large: RenderedDocument[];
beforeAll(async () => {
  sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
  const suite = (name: string) => OCR_DOCUMENT_SUITE.find((entry) => entry.spec.name === name)!.spec;
  [shot, doc, ...large] = await Promise.all([
    productShot(),
    documentImage(),
    renderDocument(suite("lists"), { format: "png", scale: 4 }),
    renderDocument(suite("ruled-4x5"), { format: "png", scale: 4 }),
  ]);
});

async function alphaAt(png: Uint8Array, points: readonly (readonly [number, number])[]) {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return points.map(([x, y]) => data[(y * info.width + x) * info.channels + 3]!);
}

for (const codec of CODECS) {
  describe(`remove-background on the embedded remover (codec ${codec})`, () => {
    const running = useServer({ codec });
    let server: PixportServer;
    let live: string;
    let test: string;

    beforeAll(async () => {
      server = running.server;
      live = await newKey(server, "live", "cutout");
      test = await newKey(server, "test", "cutout");
    });

    it("answers 201 with a new same-size PNG whose background is transparent; billed 2", async () => {
      const source = await upload(server.url, live, shot, "bottle");
      const response = await call(server.url, "POST", `/v1/images/${source.id}/remove-background`, {
        key: live,
      });
      expect(response.status).toBe(201);
      expect(Object.keys(response.json).sort()).toEqual([...IMAGE_KEYS].sort());
      expect(response.json).toMatchObject({ name: "bottle", format: "png", width: WIDTH, height: HEIGHT });
      expect(response.json.id).toMatch(ID);
      expect(response.json.id).not.toBe(source.id);
      expect(response.headers.get("x-image-processing-usage")).toBe("2");
      const download = await call(server.url, "GET", `/v1/images/${response.json.id}/download`, {
        key: live,
      });
      expect(download.headers.get("content-type")).toBe("image/png");
      const [corner, edge, centre] = await alphaAt(download.bytes, [
        [2, 2],
        [WIDTH - 3, HEIGHT - 3],
        [120, 90],
      ]);
      expect(corner).toBeLessThanOrEqual(5);
      expect(edge).toBeLessThanOrEqual(5);
      expect(centre).toBeGreaterThanOrEqual(250);
    });

    it("accepts {} and {name}; validates name; unknown image is 404", async () => {
      const source = await upload(server.url, live, shot);
      const empty = await call(server.url, "POST", `/v1/images/${source.id}/remove-background`, {
        key: live,
        json: {},
      });
      expect(empty.status).toBe(201);
      const named = await call(server.url, "POST", `/v1/images/${source.id}/remove-background`, {
        key: live,
        json: { name: "cutout" },
      });
      expect(named.status).toBe(201);
      expect(named.json.name).toBe("cutout");
      const invalid = await call(server.url, "POST", `/v1/images/${source.id}/remove-background`, {
        key: live,
        json: { name: "" },
      });
      expect(invalid.status).toBe(422);
      expect(invalid.headers.get("x-image-processing-usage")).toBe("0");
      const missing = await call(
        server.url,
        "POST",
        "/v1/images/image_a00000000000000000000000/remove-background",
        {
          key: live,
        },
      );
      expect(missing.status).toBe(404);
    });

    it("a test key's cutout is billed 0 and carries the test mark", async () => {
      const liveSource = await upload(server.url, live, shot);
      const testSource = await upload(server.url, test, shot);
      const liveCut = await call(server.url, "POST", `/v1/images/${liveSource.id}/remove-background`, {
        key: live,
      });
      const testCut = await call(server.url, "POST", `/v1/images/${testSource.id}/remove-background`, {
        key: test,
      });
      expect(testCut.status).toBe(201);
      expect(testCut.headers.get("x-image-processing-usage")).toBe("0");
      expect(testCut.json.format).toBe("png");
      const [liveBytes, testBytes] = await Promise.all([
        call(server.url, "GET", `/v1/images/${liveCut.json.id}/download`, { key: live }),
        call(server.url, "GET", `/v1/images/${testCut.json.id}/download`, { key: test }),
      ]);
      const rawOf = (bytes: Uint8Array) => sharp(bytes).ensureAlpha().raw().toBuffer();
      const [a, b] = await Promise.all([rawOf(liveBytes.bytes), rawOf(testBytes.bytes)]);
      expect(a.length).toBe(b.length);
      expect(a.equals(b)).toBe(false);
    });
  });
}

describe("extract-formatted-text on the embedded tesseract extractor (no models registry)", () => {
  const running = useServer();
  let server: PixportServer;
  beforeAll(() => {
    server = running.server;
  });

  it("a live key gets markdown and plain text, offline; a test key gets 403", async () => {
    const live = await newKey(server, "live", "reader");
    const test = await newKey(server, "test", "reader");
    const image = await upload(server.url, live, doc, "notes");
    const markdown = await call(server.url, "POST", `/v1/images/${image.id}/extract-formatted-text`, {
      key: live,
      json: { format: "markdown" },
    });
    expect(markdown.status).toBe(201);
    expect(markdown.json.format).toBe("markdown");
    const lines = (markdown.json.content as string).split("\n");
    expect(lines[0]).toBe("# Packing Notes");
    expect(lines).toContain("Every parcel leaves the dock before noon.");
    expect(lines).toContain("- Seal the boxes twice");
    expect(lines).toContain("- Label every pallet");
    const plain = await call(server.url, "POST", `/v1/images/${image.id}/extract-formatted-text`, {
      key: live,
      json: { format: "plain" },
    });
    expect(plain.status).toBe(201);
    expect(plain.json).toMatchObject({ format: "plain" });
    expect((plain.json.content as string).split("\n")).toContain("Packing Notes");
    const testImage = await upload(server.url, test, doc);
    const forbidden = await call(server.url, "POST", `/v1/images/${testImage.id}/extract-formatted-text`, {
      key: test,
      json: { format: "markdown" },
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json).toMatchObject({ code: "FEATURE_NOT_AVAILABLE" });
  });

  it("reads a 2400 px page over HTTP exactly as the library reads the same PNG (lossless input)", async () => {
    await expectHttpReadsLikeTheLibrary(server, "wasm");
  });
});

/**
 * Uploads the two 2400 px pages and asks the server for their markdown: each answer must be exactly
 * what the library (same engine) reads from the same PNG, and hold every heading, list item and
 * table cell of the document.
 */
async function expectHttpReadsLikeTheLibrary(server: PixportServer, engine: "wasm" | "native") {
  const live = await newKey(server, "live", `${engine}-reader`);
  const library = createTesseractTextExtractor({ engine, workers: 1 });
  try {
    for (const document of large) {
      expect(document.width).toBe(2400);
      const image = await upload(server.url, live, document.data, document.name);
      const answer = await call(server.url, "POST", `/v1/images/${image.id}/extract-formatted-text`, {
        key: live,
        json: { format: "markdown" },
      });
      expect(answer.status).toBe(201);
      const direct = await library.extract({
        model: "tesseract",
        image: { data: document.data, mimeType: "image/png", width: document.width, height: document.height },
        format: "markdown",
      });
      expect(answer.json.content).toBe(direct);
      const got = parseMarkdownStructure(answer.json.content as string);
      expect(got.headings).toEqual(document.structure.headings);
      expect(got.bullets).toEqual(document.structure.bullets);
      expect(got.numbered).toEqual(document.structure.numbered);
      expect(got.tables).toEqual(document.structure.tables);
    }
  } finally {
    await library.close();
  }
}

describe("extract-formatted-text on the native tesseract engine (ocrEngine: native)", () => {
  const running = useServer({ ocrEngine: "native" });

  it("reads 2400 px pages over HTTP exactly as the native library reads the same PNG", async () => {
    await expectHttpReadsLikeTheLibrary(running.server, "native");
  });
});
