/**
 * Ingestion takes extra steps, so `imagine` (which may have to crop the model's picture to its
 * 1024 x 1024 square) decodes and encodes once instead of twice (a JPEG made, then re-encoded by the
 * upload path). Measured here as PSNR against a lossless reference, on the sharp codec.
 */
import { createSharpCodec } from "@pixport/codec-sharp";
import {
  type Caller,
  createBlobStorePublisher,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  createMemoryKeyStore,
  type ImageGenerator,
} from "@pixport/core";
import sharp from "sharp";
import { describe, expect, it } from "vitest";

const QUALITY = 90;

/** A detailed picture (gradients, fine stripes and noise) of another size than the square. */
async function generatedPicture(): Promise<Uint8Array> {
  const width = 1280;
  const height = 1100;
  const raw = Buffer.alloc(width * height * 3);
  let seed = 7;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const noise = (seed >> 16) % 24;
      const stripe = (x >> 2) % 2 === 0 ? 40 : 0;
      raw.set(
        [(x * 255) / width + noise - 12, (y * 255) / height + stripe, ((x + y) % 256) - noise],
        (y * width + x) * 3,
      );
    }
  }
  return new Uint8Array(
    await sharp(raw, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer(),
  );
}

async function pixels(bytes: Uint8Array | Buffer) {
  return sharp(bytes).removeAlpha().raw().toBuffer();
}

function psnr(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let index = 0; index < a.length; index++) sum += (a[index]! - b[index]!) ** 2;
  return 10 * Math.log10((255 * 255) / (sum / a.length));
}

describe("imagine encodes once", () => {
  it("keeps more of the picture than a JPEG re-encoded by the upload path", async () => {
    const picture = await generatedPicture();
    const generator: ImageGenerator = {
      models: ["sdxl"],
      defaultModel: "sdxl",
      generate: async () => picture,
    };
    const blobStore = createMemoryBlobStore();
    const pipeline = createImagePipeline(
      {
        codec: createSharpCodec(),
        blobStore,
        images: createMemoryImageRepository(),
        keys: createMemoryKeyStore(),
        publisher: createBlobStorePublisher({
          source: blobStore,
          target: createMemoryBlobStore(),
          publicBaseUrl: "https://cdn.test",
        }),
        models: { generator },
      },
      { encodeQuality: QUALITY },
    );
    const caller: Caller = { accountId: "a", keyKind: "live", keyId: "key_a" };
    const image = await pipeline.imagineImage(caller, { body: { name: "art", prompt: "a field" } });
    expect(image).toMatchObject({ width: 1024, height: 1024, format: "jpeg" });
    const stored = (await pipeline.downloadImage(caller, { imageId: image.id })).data;

    // The lossless reference: the same square crop, no encode.
    const square = sharp(picture).resize(1024, 1024, { fit: "cover", position: "centre" });
    const reference = await pixels(await square.clone().png().toBuffer());
    // What the previous code stored: the square as a JPEG, then that JPEG re-encoded on ingestion.
    const once = await square.clone().jpeg({ quality: QUALITY }).toBuffer();
    const twice = await sharp(once).jpeg({ quality: QUALITY }).toBuffer();

    const now = psnr(reference, await pixels(stored));
    const before = psnr(reference, await pixels(twice));
    console.log(
      `imagine PSNR against the lossless crop: ${now.toFixed(2)} dB (one encode) vs ${before.toFixed(2)} dB (two)`,
    );
    expect(now).toBeGreaterThan(before + 0.2);
  });
});
