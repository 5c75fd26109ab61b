import { createJimpCodec } from "@pixport/codec-jimp";
import { ErrorCodes, isImagePipelineError } from "@pixport/core";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";

// The worker threads: the event loop stays free while jimp works, the caller's bytes are left
// alone, errors cross the thread boundary with their codes, and bad requests fail as on the
// calling thread.

const codec = createJimpCodec({ workers: 2 });
const PNG = { format: "png", quality: 100, flattenBackground: { r: 0, g: 0, b: 0, alpha: 1 } } as const;
const LIMITS = { maxInputPixels: 50_000_000 };
afterAll(() => codec.close());

/** A noisy 2400 x 1600 JPEG: seconds of jimp work. */
async function largePhoto(): Promise<Uint8Array> {
  const width = 2400;
  const height = 1600;
  const raw = Buffer.alloc(width * height * 3);
  let seed = 11;
  for (let index = 0; index < raw.length; index += 1) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    raw[index] = (seed >> 16) & 255;
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer(),
  );
}

describe("jimp in worker threads", () => {
  it("keeps the event loop free during a large transform and leaves the input bytes intact", {
    timeout: 60_000,
  }, async () => {
    const input = await largePhoto();
    const copy = input.slice();
    // Time the event loop was stuck: every gap between 5 ms ticks beyond 20 ms counts.
    let last = performance.now();
    let blocked = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      blocked += Math.max(0, now - last - 20);
      last = now;
    }, 5);
    const started = performance.now();
    const result = await codec.transform({
      input,
      steps: [{ type: "blur", sigma: 3 }],
      output: { ...PNG, format: "jpeg", quality: 80 },
      limits: LIMITS,
    });
    const duration = performance.now() - started;
    clearInterval(ticker);
    // The stretch since the last tick counts too (a loop blocked all along never ticks at all).
    blocked += Math.max(0, performance.now() - last - 20);
    expect(result).toMatchObject({ format: "jpeg", width: 2400, height: 1600 });
    expect((await sharp(result.data).metadata()).width).toBe(2400);
    // On the calling thread, decode, blur and encode block the loop for almost all of the call
    // (measured: 939 of 959 ms); half leaves room for a busy machine.
    expect(blocked, `blocked ${blocked.toFixed(0)} ms of a ${duration.toFixed(0)} ms call`).toBeLessThan(
      duration / 2,
    );
    expect(input.byteLength).toBe(copy.byteLength);
    expect(Buffer.from(input).equals(Buffer.from(copy))).toBe(true);
  });

  it("brings pixport errors back with their codes and refuses bad requests before any worker", async () => {
    const broken = await codec
      .transform({
        input: new Uint8Array([0xff, 0xd8, 0xff, 1, 2, 3]),
        steps: [],
        output: PNG,
        limits: LIMITS,
      })
      .catch((error: unknown) => error);
    expect(isImagePipelineError(broken) && broken.code).toBe(ErrorCodes.INVALID_IMAGE);
    const unsupported = await codec
      .transform({
        input: new Uint8Array([1]),
        steps: [{ type: "sepia" } as never],
        output: PNG,
        limits: LIMITS,
      })
      .catch((error: unknown) => error);
    expect(isImagePipelineError(unsupported) && unsupported.code).toBe(ErrorCodes.UNSUPPORTED_OPERATION);
    await expect(
      codec.transform({ input: "/etc/passwd" as never, steps: [], output: PNG, limits: LIMITS }),
    ).rejects.toThrow(TypeError);
  });

  it("runs many transforms at once on its workers, each answering its own request", async () => {
    const colours = [10, 60, 110, 160, 210, 250];
    const inputs = await Promise.all(
      colours.map((value) =>
        sharp({ create: { width: 30, height: 20, channels: 3, background: { r: value, g: 0, b: 0 } } })
          .png()
          .toBuffer(),
      ),
    );
    const results = await Promise.all(
      inputs.map((input, index) =>
        codec.transform({
          input: new Uint8Array(input),
          steps: [
            {
              type: "resize",
              width: 10 + index,
              height: 5,
              fit: "fill",
              position: "center",
              background: { r: 0, g: 0, b: 0, alpha: 1 },
            },
          ],
          output: PNG,
          limits: LIMITS,
        }),
      ),
    );
    for (const [index, result] of results.entries()) {
      expect(result.width).toBe(10 + index);
      const { data } = await sharp(result.data).raw().toBuffer({ resolveWithObject: true });
      expect(Math.abs(data[0]! - colours[index]!)).toBeLessThanOrEqual(1);
    }
  });
});

describe("the jimp worker script", () => {
  it("a missing script fails at creation with INVALID_CONFIGURATION naming it; workers: 0 needs none", async () => {
    const missing = "/nonexistent/pixport/worker.js";
    let error: unknown;
    try {
      createJimpCodec({ workerScript: missing });
    } catch (caught) {
      error = caught;
    }
    expect(isImagePipelineError(error) && error.code).toBe(ErrorCodes.INVALID_CONFIGURATION);
    expect((error as Error).message).toContain(missing);
    const inline = createJimpCodec({ workerScript: missing, workers: 0 });
    expect(inline.name).toBe("jimp");
    await inline.close();
  });
});
