import { resolve, Tokens } from "@pixport/container";
import { IMAGE_FORMATS, type ImageFormat, sniffImageFormat } from "@pixport/core";
import { FILE_EXTENSIONS, MIME_TYPES } from "@pixport/core/adapter-kit";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { CODECS, call, decode, isClose, mean, newKey, quadrants, useServer } from "./harness.js";

/*
 * Every format the format table lists is stored, published, served at its public URL with its own
 * content type, and imported back from that URL, on each codec through the prebuilt server over
 * real sockets. GIF, AVIF and TIFF once got public URLs that answered 404.
 */

const WIDTH = 80;
const HEIGHT = 60;

/** Quadrants (red, green / blue, white) encoded by sharp as `format`. */
async function quadrantsAs(format: ImageFormat): Promise<Uint8Array> {
  const png = Buffer.from(await quadrants(WIDTH, HEIGHT));
  if (format === "avif")
    return sharp(png).avif({ quality: 90, chromaSubsampling: "4:4:4", effort: 1 }).toBuffer();
  if (format === "gif") return sharp(png).gif({ dither: 0 }).toBuffer();
  if (format === "tiff") return sharp(png).tiff({ compression: "lzw" }).toBuffer();
  return sharp(png).toFormat(format, { quality: 95 }).toBuffer();
}

/** The bytes decode to the four quadrants' colours (sampled away from the edges lossy codecs blur). */
async function expectQuadrants(bytes: Uint8Array, label: string): Promise<void> {
  const raw = await decode(bytes);
  expect([raw.width, raw.height], label).toEqual([WIDTH, HEIGHT]);
  const inset = (x0: number, y0: number) => mean(raw, x0 + 10, y0 + 10, x0 + 30, y0 + 20).slice(0, 3);
  const tolerance = 24;
  expect(isClose(inset(0, 0), [255, 0, 0], tolerance), `${label} top left ${inset(0, 0)}`).toBe(true);
  expect(isClose(inset(40, 0), [0, 255, 0], tolerance), `${label} top right ${inset(40, 0)}`).toBe(true);
  expect(isClose(inset(0, 30), [0, 0, 255], tolerance), `${label} bottom left ${inset(0, 30)}`).toBe(true);
  expect(isClose(inset(40, 30), [255, 255, 255], tolerance), `${label} bottom right ${inset(40, 30)}`).toBe(
    true,
  );
}

describe.each(CODECS)("publishing every stored format (%s)", (codec) => {
  const running = useServer({ codec });
  let key: string;
  beforeAll(async () => {
    key = await newKey(running.server, "live", `publish-formats-${codec}`);
  });

  it("writes every format of the table, so every one of them is published below", () => {
    const { outputFormats } = resolve(running.server.container, Tokens.Codec).capabilities;
    // A codec that cannot write a format cannot store it (uploads re-encode); the tests below say
    // so by name instead of passing. Today both codecs write all of them.
    expect([...outputFormats].sort()).toEqual([...IMAGE_FORMATS].sort());
  });

  for (const format of IMAGE_FORMATS) {
    it(`uploads, publishes, serves and imports back a ${format}`, async (context) => {
      const { outputFormats } = resolve(running.server.container, Tokens.Codec).capabilities;
      if (!outputFormats.includes(format)) {
        context.skip(`the ${codec} codec cannot write ${format} (not in capabilities.outputFormats)`);
      }
      const source = await quadrantsAs(format);
      expect(sniffImageFormat(source)).toBe(format);
      const form = new FormData();
      form.append("name", `quadrants-${format}`);
      form.append("image", new Blob([source]), "blob");
      const created = await call(running.url, "POST", "/v1/images/upload", { key, form });
      expect(created.status, JSON.stringify(created.json)).toBe(201);
      expect(created.json).toMatchObject({ format, width: WIDTH, height: HEIGHT, url: null });
      const id: string = created.json.id;

      const published = await call(running.url, "POST", `/v1/images/${id}/publish`, { key });
      expect(published.status).toBe(201);
      const url: string = published.json.url;
      expect(url).toBe(`${running.url}/images/${id}.${FILE_EXTENSIONS[format]}`);

      // The published URL, the URL without an extension and (for jpeg) the format's other spelling.
      const spellings = [url, url.slice(0, url.lastIndexOf("."))];
      if (FILE_EXTENSIONS[format] !== format) spellings.push(`${running.url}/images/${id}.${format}`);
      for (const address of spellings) {
        const response = await fetch(address);
        const bytes = new Uint8Array(await response.arrayBuffer());
        expect(response.status, address).toBe(200);
        expect(response.headers.get("content-type"), address).toBe(MIME_TYPES[format]);
        expect(response.headers.get("x-content-type-options"), address).toBe("nosniff");
        expect(Number(response.headers.get("content-length")), address).toBe(bytes.byteLength);
        expect(sniffImageFormat(bytes), address).toBe(format);
        await expectQuadrants(bytes, address);
      }
      const head = await fetch(url, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toBe(MIME_TYPES[format]);

      // Another format's extension names no copy of this image.
      const other = IMAGE_FORMATS.find((candidate) => FILE_EXTENSIONS[candidate] !== FILE_EXTENSIONS[format]);
      expect((await fetch(`${running.url}/images/${id}.${FILE_EXTENSIONS[other!]}`)).status).toBe(404);

      // URL import of the published URL reads the public store (no network fetch) and keeps the format.
      for (const address of spellings) {
        const imported = await call(running.url, "POST", "/v1/images", {
          key,
          json: { name: `imported-${format}`, url: address },
        });
        expect(imported.status, `${address}: ${JSON.stringify(imported.json)}`).toBe(201);
        expect(imported.json).toMatchObject({ format, width: WIDTH, height: HEIGHT });
        expect(imported.json.id).not.toBe(id);
        const download = await call(running.url, "GET", `/v1/images/${imported.json.id}/download`, { key });
        expect(download.status).toBe(200);
        expect(download.headers.get("content-type")).toBe(MIME_TYPES[format]);
        await expectQuadrants(download.bytes, `import of ${address}`);
      }

      const unpublished = await call(running.url, "POST", `/v1/images/${id}/unpublish`, { key });
      expect(unpublished.status).toBe(201);
      for (const address of spellings) expect((await fetch(address)).status, address).toBe(404);
    });
  }
});
