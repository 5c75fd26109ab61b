import { request as httpRequest } from "node:http";
import { crc32 } from "node:zlib";
import { GARBAGE_BYTES, HEIC_HEVC_BYTES, pngBomb, SVG_BYTES, truncate } from "@pixport/testing";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newKey, photo, solid, upload, uploadForm, useServer } from "./harness.js";

/*
 * Bad uploads and bad requests (broken, hostile and oversized images; malformed requests), sent over a real
 * socket to the prebuilt server. The contract decides every status: bad image input is a 422 on
 * `image`, unparseable requests are 400. After each attack nothing may be stored and the server must
 * keep serving.
 */

let base: string;
let key: string;

const running = useServer();
beforeAll(async () => {
  base = running.url;
  key = await newKey(running.server, "live", "attacker");
});

async function stored(): Promise<number> {
  return (await call(base, "GET", "/v1/images?take=100", { key })).json.data.length;
}

async function rejectedUpload(bytes: Uint8Array, filename = "blob") {
  const before = await stored();
  const response = await call(base, "POST", "/v1/images/upload", {
    key,
    form: uploadForm("attack", bytes, filename),
  });
  expect(response.status, JSON.stringify(response.json)).toBe(422);
  expect(response.json.errors).toHaveLength(1);
  expect(response.json.errors[0]).toMatch(/^image /);
  expect(await stored()).toBe(before);
  return response.json.errors[0] as string;
}

describe("image bombs and lying files (catalogue A)", () => {
  it("A1: refuses a 20000x20000 PNG deflate bomb from its header, quickly and without decoding", async () => {
    const bomb = pngBomb();
    expect(bomb.byteLength).toBeLessThan(1024 * 1024);
    const rssBefore = process.memoryUsage.rss();
    const started = performance.now();
    const message = await rejectedUpload(bomb);
    const elapsed = performance.now() - started;
    expect(message).toBe(
      "image must be at most 10000 x 10000 pixels and 50 megapixels (received 20000 x 20000)",
    );
    // A decode would allocate 400 MB (1-bit 20000x20000 expanded to 8-bit) and take seconds.
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(200 * 1024 * 1024);
    expect(elapsed).toBeLessThan(5_000);
  });

  it("A2: refuses 8000x8000 (64 MP): under the side limit, over the pixel limit", async () => {
    expect(await rejectedUpload(pngBomb(8000, 8000))).toMatch(/received 8000 x 8000/);
  });

  it("A3: refuses a small JPEG whose header declares 64250x64250", async () => {
    const jpeg = Buffer.from(await solid(16, 16, [9, 9, 9], "jpeg"));
    // Patch the SOF0 frame's height and width (bytes 5..8 after the FFC0 marker).
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(sof).toBeGreaterThan(0);
    jpeg.writeUInt16BE(64250, sof + 5);
    jpeg.writeUInt16BE(64250, sof + 7);
    expect(await rejectedUpload(jpeg)).toMatch(/received 64250 x 64250/);
  });

  it("A4: refuses a PNG whose header claims more rows than its data holds", async () => {
    const honest = Buffer.from(
      await sharp({ create: { width: 50, height: 50, channels: 3, background: "red" } })
        .png()
        .toBuffer(),
    );
    // IHDR height lives at byte 20; claim 5000 rows (within limits) with only 50 rows of data.
    honest.writeUInt32BE(5000, 20);
    // Fix the IHDR CRC so the header itself parses and only the data is short.
    honest.writeUInt32BE(crc32(honest.subarray(12, 29)) >>> 0, 29);
    expect(await rejectedUpload(honest)).toMatch(/^image must be a valid jpeg, png or webp image/);
  });

  it("A5/A6: refuses a JPEG cut at 70 % and a PNG cut before IEND", async () => {
    const jpeg = await photo(200, 150);
    await rejectedUpload(truncate(jpeg, 0.7));
    const png = new Uint8Array(
      await sharp(Buffer.from(await photo(120, 90)))
        .png()
        .toBuffer(),
    );
    await rejectedUpload(png.subarray(0, png.byteLength - 40));
  });

  it("A19/A21/A24: refuses SVG, HTML sent as image/png, HEVC-coded HEIC and a zero-byte file", async () => {
    const refused = "image must be a jpeg, png or webp file (or avif, gif or tiff)";
    expect(await rejectedUpload(SVG_BYTES, "a.svg")).toBe(refused);
    expect(await rejectedUpload(GARBAGE_BYTES, "a.png")).toBe(refused);
    expect(await rejectedUpload(new Uint8Array(0), "empty.jpg")).toBe(refused);
    expect(await rejectedUpload(HEIC_HEVC_BYTES, "IMG_0001.HEIC")).toMatch(
      /^image is a HEIC image coded with HEVC, which pixport cannot decode; convert it to JPEG or AVIF/,
    );
  });

  it("A23: strips EXIF (including GPS) from what it stores", async () => {
    const withExif = await sharp({ create: { width: 20, height: 20, channels: 3, background: "blue" } })
      .jpeg()
      .withExif({ IFD0: { Copyright: "secret-owner" }, IFD3: { GPSLatitudeRef: "N" } })
      .toBuffer();
    expect((await sharp(withExif).metadata()).exif).toBeDefined();
    const image = await upload(base, key, new Uint8Array(withExif), "exif");
    const downloaded = await call(base, "GET", `/v1/images/${image.id}/download`, { key });
    expect((await sharp(downloaded.bytes).metadata()).exif).toBeUndefined();
    expect(Buffer.from(downloaded.bytes).includes("secret-owner")).toBe(false);
  });

  it("A25: refuses an output over 10000 px from a tiny image before any work", async () => {
    const wide = await upload(base, key, await solid(100, 10, [1, 1, 1]), "wide");
    // Height 2000 keeps the 10:1 aspect ratio: 20000 x 2000, over the output side limit.
    const response = await call(base, "POST", `/v1/images/${wide.id}/resize`, {
      key,
      json: { height: 2000 },
    });
    expect(response.status).toBe(422);
    expect(response.json.errors).toEqual([
      "height must result in an image of at most 10000 x 10000 pixels (would be 20000 x 2000)",
    ]);
  });
});

describe("malformed requests (catalogue C)", () => {
  it("C2: refuses a chunked upload that crosses the cap while streaming, and keeps serving", async () => {
    const before = await stored();
    const status = await new Promise<number>((resolve, reject) => {
      const boundary = "----attack";
      const request = httpRequest(`${base}/v1/images/upload`, {
        method: "POST",
        headers: {
          "x-api-key": key,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "transfer-encoding": "chunked",
        },
      });
      request.on("response", (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on("error", reject);
      request.write(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n`);
      request.write(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="b"\r\n\r\n`);
      const chunk = Buffer.alloc(1024 * 1024, 0xff);
      let sent = 0;
      const pump = () => {
        while (sent < 25) {
          sent++;
          if (!request.write(chunk)) {
            request.once("drain", pump);
            return;
          }
        }
        request.end(`\r\n--${boundary}--\r\n`);
      };
      pump();
    }).catch(() => 422);
    expect(status).toBe(422);
    expect(await stored()).toBe(before);
    expect((await call(base, "GET", "/v1/images", { key })).status).toBe(200);
  });

  it("C6: survives a client that disconnects mid-upload, storing nothing", async () => {
    const before = await stored();
    await new Promise<void>((resolve) => {
      const request = httpRequest(`${base}/v1/images/upload`, {
        method: "POST",
        headers: {
          "x-api-key": key,
          "content-type": "multipart/form-data; boundary=x",
          "content-length": "1000000",
        },
      });
      request.on("error", () => resolve());
      request.write('--x\r\nContent-Disposition: form-data; name="image"; filename="b"\r\n\r\n');
      request.write(Buffer.alloc(10_000));
      setTimeout(() => {
        request.destroy();
        resolve();
      }, 50);
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await stored()).toBe(before);
    expect((await call(base, "GET", "/v1/images", { key })).status).toBe(200);
  });

  it("C4/C10: prototype-polluting names and JSON keys have no effect", async () => {
    const form = new FormData();
    form.append("__proto__", "x");
    form.append("constructor", "y");
    form.append("name", "proto");
    form.append("image", new Blob([await solid(4, 4, [0, 0, 0])]), "blob");
    const response = await call(base, "POST", "/v1/images/upload", { key, form });
    expect(response.status).toBe(201);
    const polluted = await call(base, "POST", `/v1/images/${response.json.id}/blur`, {
      key,
      raw: '{"__proto__":{"sigma":999,"polluted":true},"constructor":{"prototype":{"polluted":true}}}',
      contentType: "application/json",
    });
    expect(polluted.status).toBe(201);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("C9: answers a 2 MB JSON body with 400 and deeply nested JSON without crashing", async () => {
    const image = await upload(base, key, await solid(4, 4, [0, 0, 0]), "json");
    const huge = await call(base, "POST", `/v1/images/${image.id}/blur`, {
      key,
      raw: `{"pad":"${"x".repeat(2 * 1024 * 1024)}"}`,
      contentType: "application/json",
    });
    expect(huge.status).toBe(400);
    const deep = await call(base, "POST", `/v1/images/${image.id}/blur`, {
      key,
      raw: `${"[".repeat(50_000)}${"]".repeat(50_000)}`,
      contentType: "application/json",
    });
    expect(deep.status).toBe(422);
    expect(deep.json.errors).toEqual(["body must be a JSON object"]);
  });

  it("C13: refuses a repeated query parameter instead of picking one", async () => {
    const response = await call(base, "GET", "/v1/images?take=1&take=99", { key });
    expect(response.status).toBe(422);
    expect(response.json.errors[0]).toMatch(/^take /);
  });

  it("D1: refuses a key passed in the query string", async () => {
    const response = await call(base, "GET", `/v1/images?x-api-key=${key}`);
    expect(response.status).toBe(401);
  });
});
