import { describe, expect, it } from "vitest";
import {
  type Caller,
  createImagePipeline,
  createMemoryBlobStore,
  createMemoryImageRepository,
  ErrorCodes,
  type ImageCodec,
  isImagePipelineError,
} from "../src/index.js";

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** A fake "png": the magic bytes, then width and height in one byte each. */
const fakePng = (width: number, height: number) => new Uint8Array([...PNG_MAGIC, width, height]);

/** A codec that "resizes" by rewriting the two size bytes of the fake png. */
const codec: ImageCodec = {
  name: "fake",
  capabilities: {
    inputFormats: ["png"],
    outputFormats: ["jpeg", "png", "webp"],
    steps: ["resize", "overlay"],
  },
  probe: async (input) => ({ format: "png", width: input[8]!, height: input[9]! }),
  transform: async (request) => {
    const resize = request.steps.find((step) => step.type === "resize");
    const width = resize?.width ?? request.input[8]!;
    const height = resize?.height ?? request.input[9]!;
    return { data: fakePng(width, height), format: "png", width, height };
  },
};

const caller: Caller = { accountId: "library", keyKind: "live", keyId: "library" };

async function codeOf(promise: Promise<unknown>) {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  return isImagePipelineError(error) ? { code: error.code, message: error.message } : error;
}

describe("a library pipeline without keys or a publisher", () => {
  const pipeline = createImagePipeline({
    codec,
    blobStore: createMemoryBlobStore(),
    images: createMemoryImageRepository(),
  });

  it("uploads, transforms, lists and deletes images", async () => {
    const source = await pipeline.uploadImage(caller, { name: "photo", image: fakePng(40, 20) });
    const small = await pipeline.resizeImage(caller, { imageId: source.id, body: { width: 20 } });
    expect(small).toMatchObject({ width: 20, height: 10, url: null });
    expect((await pipeline.listImages(caller, {})).data.map((image) => image.id)).toEqual([
      small.id,
      source.id,
    ]);
    await pipeline.deleteImage(caller, { imageId: small.id });
    expect(await codeOf(pipeline.getImage(caller, { imageId: small.id }))).toMatchObject({
      code: ErrorCodes.IMAGE_NOT_FOUND,
    });
  });

  it("answers a configuration error naming what is missing when a call needs it", async () => {
    expect(await codeOf(pipeline.authenticate("pk_live_whatever"))).toEqual({
      code: ErrorCodes.INVALID_CONFIGURATION,
      message: "authenticate needs `keys` (a KeyStore): pass it in createImagePipeline's deps.",
    });
    const image = await pipeline.uploadImage(caller, { name: "photo", image: fakePng(4, 4) });
    for (const operation of ["publishImage", "unpublishImage"] as const) {
      expect(await codeOf(pipeline[operation](caller, { imageId: image.id }))).toEqual({
        code: ErrorCodes.INVALID_CONFIGURATION,
        message: `${operation} needs \`publisher\` (an ImagePublisher): pass it in createImagePipeline's deps.`,
      });
    }
    // Nothing was published or billed by the refused calls: the image is still private and there.
    expect(await pipeline.getImage(caller, { imageId: image.id })).toMatchObject({ url: null });
  });

  it("still validates a JavaScript caller's input at run time, with the contract's 422 issues", async () => {
    const error = await pipeline
      .resizeImage(caller, { imageId: "image_1", body: { width: "20", fit: "stretch" } } as never)
      .catch((caught: unknown) => caught);
    expect(isImagePipelineError(error) && error.issues).toEqual([
      { path: "image_id", message: "must be a valid image id" },
      { path: "width", message: "must be an integer between 1 and 10000" },
      { path: "fit", message: "must be one of: fill, contain, cover" },
    ]);
  });
});
