import { describe, expect, it } from "vitest";
import {
  type BlobStore,
  type Caller,
  createImagePipeline,
  createMemoryBlobStore,
  type ImageCodec,
  type ImageFetcher,
  type ImageFetchRequest,
  ImagePipelineError,
  type ImagePipelineOptions,
  isImagePipelineError,
} from "../src/index.js";
import { memoryDeps } from "./memory-deps.js";

// A 1x1 PNG; the fake codec reads the IHDR size and "re-encodes" by copying.
const PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="),
  (character) => character.charCodeAt(0),
);

const pngCodec: ImageCodec = {
  name: "fake-png",
  // Overlay: images imported with a test key get the test mark.
  capabilities: { inputFormats: ["png"], outputFormats: ["png", "jpeg", "webp"], steps: ["overlay"] },
  probe: async (bytes) => {
    if (bytes[1] !== 0x50) return null;
    const view = new DataView(bytes.buffer, bytes.byteOffset);
    return { format: "png", width: view.getUint32(16), height: view.getUint32(20) };
  },
  transform: async ({ input }) => ({ data: input.slice(), format: "png", width: 1, height: 1 }),
};

const caller: Caller = { accountId: "acme", keyKind: "test", keyId: "k1" };

function setup(
  options: { fetcher?: ImageFetcher; publicStore?: BlobStore | null; pipeline?: ImagePipelineOptions } = {},
) {
  const publicStore =
    options.publicStore === null ? undefined : (options.publicStore ?? createMemoryBlobStore());
  const pipeline = createImagePipeline(
    memoryDeps(
      pngCodec,
      {
        ...(options.fetcher === undefined ? {} : { fetcher: options.fetcher }),
        ...(publicStore === undefined ? {} : { publicBlobStore: publicStore }),
      },
      publicStore,
    ),
    { urlImport: { storageBaseUrls: ["https://cdn.test"] }, ...options.pipeline },
  );
  return { pipeline, publicStore };
}

/** A fetcher that records its requests and answers from a function. */
function fakeFetcher(answer: (request: ImageFetchRequest) => Promise<Uint8Array>) {
  const requests: ImageFetchRequest[] = [];
  const fetcher: ImageFetcher = {
    name: "fake",
    fetch: async (request) => {
      requests.push(request);
      return { data: await answer(request), url: request.url };
    },
  };
  return { fetcher, requests };
}

async function errorsOf(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    if (!isImagePipelineError(error)) throw error;
    return { code: error.code, errors: error.issues.map((issue) => `${issue.path} ${issue.message}`) };
  }
  throw new Error("expected a failure");
}

describe("createImageFromUrl", () => {
  it("fetches an allowed URL with the limits and the policy's redirect check, then ingests the bytes", async () => {
    const { fetcher, requests } = fakeFetcher(async () => PNG);
    const { pipeline } = setup({ fetcher });
    const image = await pipeline.createImageFromUrl(caller, {
      body: { name: "cat", url: "https://STORAGE.googleapis.com./b/cat.png#x" },
    });
    expect(image).toMatchObject({ name: "cat", format: "png", width: 1, height: 1, url: null });
    expect(requests).toHaveLength(1);
    const request = requests[0]!;
    expect(request).toMatchObject({
      url: "https://storage.googleapis.com/b/cat.png",
      maxRedirects: 3,
      maxBytes: 20 * 1024 * 1024,
      connectTimeoutMs: 5000,
      timeoutMs: 30000,
    });
    expect(request.checkRedirect("https://evil.example/x", request.url)).toMatchObject({ ok: false });
    expect(request.checkRedirect("/other.png", request.url)).toEqual({
      ok: true,
      url: "https://storage.googleapis.com/other.png",
    });
  });

  it("reports every failing field at once, before any fetch", async () => {
    // Bodies as a JavaScript caller or an HTTP client may send them (`as never`: not the typed input).
    const { fetcher, requests } = fakeFetcher(async () => PNG);
    const { pipeline } = setup({ fetcher });
    expect(await errorsOf(pipeline.createImageFromUrl(caller, { body: { url: 3 } } as never))).toEqual({
      code: "VALIDATION_FAILED",
      errors: ["name is required", "url must be a string"],
    });
    expect(await errorsOf(pipeline.createImageFromUrl(caller, { body: undefined } as never))).toEqual({
      code: "VALIDATION_FAILED",
      errors: ["name is required", "url is required"],
    });
    expect(
      await errorsOf(
        pipeline.createImageFromUrl(caller, { body: { name: "", url: "http://169.254.169.254/" } }),
      ),
    ).toEqual({
      code: "URL_NOT_ALLOWED",
      errors: ["name must be between 1 and 30 characters long", "url must be an https URL"],
    });
    expect(await errorsOf(pipeline.createImageFromUrl(caller, { body: "x" } as never))).toMatchObject({
      errors: ["body must be a JSON object"],
    });
    expect(requests).toHaveLength(0);
  });

  it.each([
    ["URL_NOT_ALLOWED", "was redirected to a host that is not allowed (evil.example)"],
    ["SOURCE_UNREACHABLE", "could not be reached (its host resolves to a non-public address)"],
    ["SOURCE_TIMEOUT", "did not answer within 30s"],
    ["SOURCE_NOT_ACCESSIBLE", "is not accessible (the source answered 404); it must be public or pre-signed"],
    ["SOURCE_ERROR", "could not be fetched (the source answered 503)"],
    ["IMAGE_TOO_LARGE", "must point to a file no larger than 20MB"],
    ["INVALID_IMAGE", "must point to a jpeg, png or webp image (or avif, gif or tiff)"],
  ] as const)("maps a %s fetch failure to a 422 entry on url", async (code, message) => {
    const { fetcher } = fakeFetcher(async () => {
      throw new ImagePipelineError(code, message, { cause: new Error("10.0.0.5 internal detail") });
    });
    const { pipeline } = setup({ fetcher });
    expect(
      await errorsOf(
        pipeline.createImageFromUrl(caller, { body: { name: "x", url: "https://pub-1.r2.dev/a.png" } }),
      ),
    ).toEqual({ code, errors: [`url ${message}`] });
  });

  it("turns unexpected fetcher errors into SOURCE_ERROR, never a 500", async () => {
    for (const thrown of [new TypeError("boom"), new ImagePipelineError("INTERNAL", "secret"), "string"]) {
      const { fetcher } = fakeFetcher(async () => {
        throw thrown;
      });
      const { pipeline } = setup({ fetcher });
      expect(
        await errorsOf(
          pipeline.createImageFromUrl(caller, { body: { name: "x", url: "https://pub-1.r2.dev/a" } }),
        ),
      ).toEqual({ code: "SOURCE_ERROR", errors: ["url could not be fetched (the source failed)"] });
    }
  });

  it("runs fetched bytes through the upload checks, reported on url", async () => {
    const svg = new TextEncoder().encode("<svg/>");
    const { fetcher } = fakeFetcher(async () => svg);
    const { pipeline } = setup({ fetcher });
    expect(
      await errorsOf(
        pipeline.createImageFromUrl(caller, { body: { name: "x", url: "https://pub-1.r2.dev/a" } }),
      ),
    ).toEqual({
      code: "INVALID_IMAGE",
      errors: ["url must be a jpeg, png or webp file (or avif, gif or tiff)"],
    });
    const huge = setup({
      fetcher: fakeFetcher(async () => PNG).fetcher,
      pipeline: { limits: { maxUploadBytes: 10 } },
    });
    expect(
      await errorsOf(
        huge.pipeline.createImageFromUrl(caller, { body: { name: "x", url: "https://pub-1.r2.dev/a" } }),
      ),
    ).toEqual({ code: "IMAGE_TOO_LARGE", errors: ["url must not be larger than 10 bytes"] });
  });

  it("reads own-storage URLs from the public store without calling the fetcher", async () => {
    const { fetcher, requests } = fakeFetcher(async () => {
      throw new Error("must not fetch");
    });
    const { pipeline, publicStore } = setup({ fetcher });
    await publicStore!.put("og-image.jpg", PNG, { contentType: "image/png" });
    await publicStore!.put("images/image_abcdefghijklmnopqrstuvwx.png", PNG, { contentType: "image/png" });
    const alias = await pipeline.createImageFromUrl(caller, {
      body: { name: "og", url: "https://storage.img-processing.com/og-image.jpg" },
    });
    expect(alias.format).toBe("png");
    const own = await pipeline.createImageFromUrl(caller, {
      body: { name: "own", url: "https://cdn.test/images/image_abcdefghijklmnopqrstuvwx" },
    });
    expect(own.width).toBe(1);
    expect(
      await errorsOf(
        pipeline.createImageFromUrl(caller, {
          body: { name: "x", url: "https://cdn.test/images/missing.png" },
        }),
      ),
    ).toEqual({
      code: "SOURCE_NOT_ACCESSIBLE",
      errors: ["url must point to a published image of this service (nothing is published there)"],
    });
    expect(requests).toHaveLength(0);
  });

  it("refuses when disabled, without a fetcher, or without a public store", async () => {
    const body = { name: "x", url: "https://pub-1.r2.dev/a.png" };
    const disabled = setup({
      fetcher: fakeFetcher(async () => PNG).fetcher,
      pipeline: { urlImport: { enabled: false } },
    });
    expect(await errorsOf(disabled.pipeline.createImageFromUrl(caller, { body }))).toEqual({
      code: "URL_NOT_ALLOWED",
      errors: ["url cannot be imported: creating images from URLs is not enabled on this server"],
    });
    const noFetcher = setup();
    expect(await errorsOf(noFetcher.pipeline.createImageFromUrl(caller, { body }))).toMatchObject({
      code: "URL_NOT_ALLOWED",
    });
    const noStore = setup({ publicStore: null });
    expect(
      await errorsOf(
        noStore.pipeline.createImageFromUrl(caller, {
          body: { name: "x", url: "https://storage.img-processing.com/og-image.jpg" },
        }),
      ),
    ).toMatchObject({ code: "URL_NOT_ALLOWED" });
  });
});
