import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { CODECS, call, halves, newKey, photo, upload, uploadForm, useServer } from "./harness.js";

// Hostile but valid requests, each built here: the answer comes within a bounded time (generous
// bounds for a loaded CI machine, far below what the same requests cost before), and the server
// stays responsive afterwards.

/** A progressive JPEG whose last scan is repeated `copies` times: thousands of valid markers. */
async function scanHeavyJpeg(copies: number): Promise<Uint8Array> {
  const jpeg = new Uint8Array(
    await sharp(await photo(64, 64))
      .jpeg({ progressive: true, quality: 80 })
      .toBuffer(),
  );
  // The last SOS segment runs from its marker to the EOI marker (FFD9) at the end.
  let lastScan = -1;
  for (let index = 0; index < jpeg.length - 1; index++) {
    if (jpeg[index] === 0xff && jpeg[index + 1] === 0xda) lastScan = index;
  }
  const scan = jpeg.subarray(lastScan, jpeg.length - 2);
  const parts = [
    jpeg.subarray(0, jpeg.length - 2),
    ...Array.from({ length: copies }, () => scan),
    jpeg.subarray(-2),
  ];
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const elapsed = async <T>(task: () => Promise<T>) => {
  const started = performance.now();
  const result = await task();
  return { result, ms: performance.now() - started };
};

describe.each(CODECS)("CPU budgets (%s)", (codec) => {
  const handle = useServer({ codec });

  it("refuses a progressive JPEG with thousands of scans before decoding it", async () => {
    const key = await newKey(handle.server, "live", "scans");
    const hostile = await scanHeavyJpeg(3_000);
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", "/v1/images/upload", { key, form: uploadForm("scans", hostile) }),
    );
    expect(result.status).toBe(422);
    expect(result.json.code).toBe("IMAGE_TOO_LARGE");
    expect(result.json.errors).toEqual([
      expect.stringMatching(/^image must be a jpeg with at most 100 scans/),
    ]);
    expect(ms).toBeLessThan(5_000);
    // An ordinary progressive JPEG still uploads.
    const normal = await sharp(await photo(64, 64))
      .jpeg({ progressive: true })
      .toBuffer();
    expect(
      (
        await call(handle.url, "POST", "/v1/images/upload", {
          key,
          form: uploadForm("ok", new Uint8Array(normal)),
        })
      ).status,
    ).toBe(201);
  });

  // libjpeg skips junk before a marker with a warning and decodes every scan behind it.
  it.each([
    ["one 0x00", [0x00]],
    ["a stuffed FF 00", [0xff, 0x00]],
  ])("refuses the same JPEG with %s before its first scan, before decoding it", async (_name, junk) => {
    const key = await newKey(handle.server, "live", "scans-junk");
    const bomb = await scanHeavyJpeg(3_000);
    let firstScan = 0;
    while (!(bomb[firstScan] === 0xff && bomb[firstScan + 1] === 0xda)) firstScan += 1;
    const hostile = new Uint8Array([...bomb.subarray(0, firstScan), ...junk, ...bomb.subarray(firstScan)]);
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", "/v1/images/upload", { key, form: uploadForm("junk", hostile) }),
    );
    expect(result.status).toBe(422);
    expect(result.json.code).toBe("IMAGE_TOO_LARGE");
    expect(result.json.errors).toEqual([
      expect.stringMatching(/^image must be a jpeg with at most 100 scans/),
    ]);
    expect(ms).toBeLessThan(5_000);
  });

  it("blurs a 2000 x 2000 image with the largest sigma within seconds", async () => {
    const key = await newKey(handle.server, "live", "blur");
    const image = await upload(handle.url, key, await photo(2000, 2000), "large");
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", `/v1/images/${image.id}/blur`, { key, json: { sigma: 1000 } }),
    );
    expect(result.status).toBe(201);
    expect([result.json.width, result.json.height]).toEqual([2000, 2000]);
    expect(ms).toBeLessThan(codec === "sharp" ? 5_000 : 20_000);
  }, 60_000);

  it("draws five 10000 x 10000 repeated watermarks on a 64 x 48 image within seconds", async () => {
    const key = await newKey(handle.server, "live", "tiles");
    const base = await upload(handle.url, key, await halves(64, 48, [255, 255, 255], [0, 0, 0]), "base");
    const mark = await upload(handle.url, key, await halves(64, 48, [255, 0, 0], [0, 0, 255]), "mark");
    const watermarks = Array.from({ length: 5 }, (_, index) => ({
      id: mark.id,
      left: -index * 1000,
      top: -index * 777,
      width: 10_000,
      height: 10_000,
      repetition_mode: "repeat",
    }));
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", `/v1/images/${base.id}/watermark`, { key, json: { watermarks } }),
    );
    if (codec === "sharp") {
      // Only the 64 x 48 window of each tiling is resized and decoded.
      expect(result.status, JSON.stringify(result.json)).toBe(201);
      expect([result.json.width, result.json.height]).toEqual([64, 48]);
    } else {
      // jimp scales an overlay whole, so it refuses one over the pixel limit, at once.
      expect(result.status).toBe(422);
      expect(result.json.code).toBe("IMAGE_TOO_LARGE");
    }
    expect(ms).toBeLessThan(5_000);
  }, 90_000);
});

describe.each(CODECS)("the job deadline (%s)", (codec) => {
  // jimp starts its worker threads on the first job, so its deadline leaves room for that.
  const handle = useServer({ codec, limits: { maxJobMs: codec === "sharp" ? 300 : 3_000 } });

  it("stops a job past limits.maxJobMs with a 422 naming the field, and keeps serving", async () => {
    const key = await newKey(handle.server, "live", "deadline");
    const big = await upload(handle.url, key, await photo(600, 600), "big");
    // A 10000 x 10000 image from a 600 px source takes seconds on sharp and far longer on jimp.
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", `/v1/images/${big.id}/resize`, {
        key,
        json: { width: 10_000, height: 10_000 },
      }),
    );
    expect(result.status).toBe(422);
    expect(result.json).toMatchObject({ status: 422, code: "PROCESSING_TIMEOUT" });
    expect(result.json.errors).toEqual([expect.stringMatching(/^image could not be processed in time/)]);
    expect(ms).toBeLessThan(10_000);
    const small = await upload(handle.url, key, await halves(32, 16, [0, 255, 0], [0, 0, 0]), "small");
    const mirrored = await call(handle.url, "POST", `/v1/images/${small.id}/mirror`, {
      key,
      json: { mode: "both" },
    });
    expect(mirrored.status).toBe(201);
  }, 60_000);
});

/** A 3000 x 2000 PNG of 10 px print: 24 lines of three phrases, each phrase ending with its line number. */
async function smallPrintPage(): Promise<Buffer> {
  const phrases = ["pack my box with five dozen jugs", "the quick brown fox jumps", "over the lazy dog"];
  let text = "";
  for (let line = 0; line < 24; line += 1) {
    const y = 30 + line * 80;
    phrases.forEach((phrase, column) => {
      text += `<text x="${30 + column * 1000}" y="${y}">${phrase} ${line}</text>`;
    });
  }
  // The server's codec blocks sharp's SVG loader process-wide; this renders with it, then blocks
  // it again.
  sharp.unblock({ operation: ["VipsForeignLoadSvgBuffer"] });
  return sharp(
    Buffer.from(
      `<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="2000"><rect width="100%" height="100%" fill="white"/><g font-family="DejaVu Sans" font-size="10">${text}</g></svg>`,
    ),
  )
    .png()
    .toBuffer()
    .finally(() => sharp.block({ operation: ["VipsForeignLoadSvgBuffer"] }));
}

/** Reads `page` with extract-formatted-text on `handle`'s server, sampling its reserved memory. */
async function readWatchingBudget(handle: ReturnType<typeof useServer>, account: string, page: Buffer) {
  const key = await newKey(handle.server, "live", account);
  const image = await upload(handle.url, key, page, "small print");
  let peakReserved = 0;
  const sampler = setInterval(() => {
    peakReserved = Math.max(peakReserved, handle.server.pipeline.memory()!.reservedBytes);
  }, 2);
  try {
    const response = await call(handle.url, "POST", `/v1/images/${image.id}/extract-formatted-text`, {
      key,
      json: { format: "plain" },
    });
    return { response, peakReserved };
  } finally {
    clearInterval(sampler);
  }
}

describe("the memory budget of the prebuilt server", () => {
  const handle = useServer({ memoryBudget: { maxBytes: 400 * 1024 * 1024, maxWaitMs: 30_000 } });

  it("refuses a job that could never fit with a 422 naming the field, before decoding", async () => {
    const key = await newKey(handle.server, "test", "memory");
    const tiny = await upload(handle.url, key, await halves(64, 48, [255, 0, 0], [0, 0, 255]), "tiny");
    const { result, ms } = await elapsed(() =>
      call(handle.url, "POST", `/v1/images/${tiny.id}/resize`, {
        key,
        json: { width: 10_000, height: 10_000 },
      }),
    );
    expect(result.status).toBe(422);
    expect(result.json.code).toBe("IMAGE_TOO_LARGE");
    expect(result.json.errors).toEqual([expect.stringMatching(/^width needs about \d+ MB of pixel memory/)]);
    expect(ms).toBeLessThan(2_000);
  });

  it("reserves remove-background's memory too: twice a plain job's, so a 20 MP cut-out never fits 400 MB", async () => {
    const key = await newKey(handle.server, "live", "memory-background");
    // 4500 x 4500: a plain job's estimate (about 270 MB) fits the budget; the cut-out's double does not.
    const big = await upload(
      handle.url,
      key,
      await halves(4500, 4500, [255, 255, 255], [250, 250, 250]),
      "big",
    );
    const reserved: number[] = [];
    const timer = setInterval(() => reserved.push(handle.server.pipeline.memory()!.reservedBytes), 5);
    const response = await call(handle.url, "POST", `/v1/images/${big.id}/remove-background`, { key });
    clearInterval(timer);
    expect(response.status, JSON.stringify(response.json)).toBe(422);
    expect(response.json.code).toBe("IMAGE_TOO_LARGE");
    expect(response.json.errors).toEqual([
      expect.stringMatching(/^image needs about \d+ MB of pixel memory/),
    ]);
    expect(Math.max(0, ...reserved)).toBe(0);
  });

  it("runs 8 concurrent large resizes within the budget: never more reserved than allowed, all answered", async () => {
    const key = await newKey(handle.server, "test", "memory-burst");
    const tiny = await upload(handle.url, key, await halves(64, 48, [255, 0, 0], [0, 0, 255]), "tiny");

    let peakReserved = 0;
    let peakWaiting = 0;
    const sampler = setInterval(() => {
      const stats = handle.server.pipeline.memory()!;
      peakReserved = Math.max(peakReserved, stats.reservedBytes);
      peakWaiting = Math.max(peakWaiting, stats.waiting);
    }, 2);
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const rssSampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 10);
    try {
      // Each 4000 x 4000 PNG output is estimated at about 144 MB (its encoder included): two fit in
      // the 400 MB budget at once.
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          call(handle.url, "POST", `/v1/images/${tiny.id}/resize`, {
            key,
            json: { width: 4000, height: 4000 },
          }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(201));
    } finally {
      clearInterval(sampler);
      clearInterval(rssSampler);
    }
    expect(peakReserved).toBeLessThanOrEqual(400 * 1024 * 1024);
    expect(peakReserved).toBeGreaterThan(0);
    expect(peakWaiting).toBeGreaterThan(0);
    expect(handle.server.pipeline.memory()).toEqual({
      reservedBytes: 0,
      waiting: 0,
      maxBytes: 400 * 1024 * 1024,
    });
    // Generous: the budget plus the codec's own caches and the encoded outputs.
    expect(rssPeak - rssBefore).toBeLessThan(900 * 1024 * 1024);
  }, 60_000);
  it("reserves extract-formatted-text's reading: a large page of small print is read at most 16 MP, within the budget", async () => {
    // 3000 x 2000 with 10 px text: scaled to the text size the engine reads best (x3), the page
    // would be 54 MP; the extractor reads at most 16 MP of it and reserves that while it reads.
    const { response, peakReserved } = await readWatchingBudget(handle, "memory-ocr", await smallPrintPage());
    expect(response.status, JSON.stringify(response.json)).toBe(201);
    expect(response.json.content).toContain("the quick brown fox jumps 12");
    // The read's reservation: 8 (native) or 16 (tesseract.js) bytes a pixel of a page of at most
    // 16 MP, well over the upload's and the decode's (6 MP).
    const MB = 1024 * 1024;
    expect(peakReserved).toBeGreaterThan(100 * MB);
    expect(peakReserved).toBeLessThanOrEqual(16_000_000 * 16);
    expect(handle.server.pipeline.memory()?.reservedBytes).toBe(0);
  }, 90_000);
});

describe("the embedded OCR's tuning from the server's config", () => {
  const handle = useServer({
    memoryBudget: { maxBytes: 400 * 1024 * 1024, maxWaitMs: 30_000 },
    ocr: { maxPagePixels: 2_000_000 },
  });

  it("reads with the configured page cap: the same page reserves for at most 2 MP", async () => {
    const { response, peakReserved } = await readWatchingBudget(handle, "ocr-cap", await smallPrintPage());
    expect(response.status, JSON.stringify(response.json)).toBe(201);
    // Read (at about a third of the text size wanted, so its text is not checked), and reserved
    // for a page of at most 2 MP at 16 bytes a pixel, against more than 100 MB with the default cap.
    expect(peakReserved).toBeGreaterThan(0);
    expect(peakReserved).toBeLessThanOrEqual(2_000_000 * 16 + 3000 * 2000 * 3);
  }, 90_000);
});
