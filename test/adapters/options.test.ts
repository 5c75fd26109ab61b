/**
 * Every adapter checks its options with a zod schema it exports, through core's parseOptions: a
 * bad or misspelt option is INVALID_CONFIGURATION naming the field, at construction, instead of a
 * NaN deadline or an ignored key discovered in production. (Redis and S3 have their own tests next
 * to their adapters; the ones below need no server.)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createOnnxBackgroundRemover } from "@pixport/background-onnx";
import { createSharpBackgroundRemover } from "@pixport/background-sharp";
import { isImagePipelineError } from "@pixport/core";
import { createExpressRouter } from "@pixport/http-express";
import { createLambdaHandler } from "@pixport/http-lambda";
import { createTesseractTextExtractor } from "@pixport/ocr-tesseract";
import { createOpenAiModels } from "@pixport/vision-openai";
import { describe, expect, it } from "vitest";

const handler = async () => ({ status: 200, headers: {}, body: { kind: "empty" } }) as never;

async function refusal(create: () => unknown): Promise<string> {
  try {
    await create();
  } catch (error) {
    expect(isImagePipelineError(error) && error.code, String(error)).toBe("INVALID_CONFIGURATION");
    return (error as Error).message;
  }
  throw new Error("the factory accepted bad options");
}

describe("adapter options", () => {
  it("background-sharp: ranges, the threshold order and unknown keys", async () => {
    expect(await refusal(() => createSharpBackgroundRemover({ workingSide: 0, featherSigma: -1 }))).toMatch(
      /createSharpBackgroundRemover options \(workingSide: .*; featherSigma: /,
    );
    expect(await refusal(() => createSharpBackgroundRemover({ minThreshold: 90, maxThreshold: 40 }))).toMatch(
      /minThreshold: must not be above maxThreshold/,
    );
    expect(await refusal(() => createSharpBackgroundRemover({ feather: 2 } as never))).toMatch(/feather/);
    expect(createSharpBackgroundRemover({ workingSide: 512 }).name).toBe("sharp-classical");
  });

  it("ocr-tesseract: workers, deadlines and the layout tuning", async () => {
    expect(
      await refusal(() =>
        createTesseractTextExtractor({ workers: 0, timeoutMs: -5, layout: { cellGap: 0 } }),
      ),
    ).toMatch(/workers: .*timeoutMs: .*layout\.cellGap: /);
    expect(await refusal(() => createTesseractTextExtractor({ langpath: "/x" } as never))).toMatch(
      /langpath/,
    );
    const extractor = createTesseractTextExtractor({ workers: 1 });
    expect(extractor.models).toContain("tesseract");
    await extractor.close();
  });

  it("vision-openai: the retry default and unknown keys (the registry has its own checks)", async () => {
    const registry = { registry: { vision: { baseUrl: "http://127.0.0.1:9/v1", model: "m", apiKey: "k" } } };
    expect(await refusal(() => createOpenAiModels({ registry, defaultRetryAfterSeconds: 0 }))).toMatch(
      /defaultRetryAfterSeconds: /,
    );
    expect(await refusal(() => createOpenAiModels({ registry, env: {} } as never))).toMatch(/env/);
    expect(await refusal(() => createOpenAiModels({} as never))).toMatch(/registry: /);
  });

  it("background-onnx: checked before the model is loaded", async () => {
    expect(
      await refusal(() =>
        createOnnxBackgroundRemover({ model: "", threads: 0, alphaClip: 0.7, family: "sam" as never }),
      ),
    ).toMatch(/model: .*family: .*threads: .*alphaClip: /);
  });

  it("the Express and Lambda bindings: their handler and options", async () => {
    expect(await refusal(() => createExpressRouter(undefined as never))).toMatch(/createHttpHandler/);
    expect(await refusal(() => createExpressRouter(handler, { trustProxy: true } as never))).toMatch(
      /trustProxy/,
    );
    expect(
      await refusal(() => createLambdaHandler(handler, { baseUrl: "api.example.com", basePath: "pixport" })),
    ).toMatch(/baseUrl: .*basePath: must be a path/);
    expect(typeof createLambdaHandler(handler, { basePath: "/pixport" })).toBe("function");
  });

  it("every adapter package exports an options schema (except placeholders, which takes none)", () => {
    const root = path.resolve(fileURLToPath(new URL("../..", import.meta.url)), "adapters");
    const withoutOptions = new Set(["placeholders"]);
    const missing: string[] = [];
    for (const name of [
      "background-onnx",
      "background-sharp",
      "codec-jimp",
      "codec-sharp",
      "fetch-node",
      "http-express",
      "http-fastify",
      "http-lambda",
      "ocr-tesseract",
      "placeholders",
      "redis",
      "storage-fs",
      "storage-s3",
      "vision-openai",
    ]) {
      const index = readFileSync(path.join(root, name, "src", "index.ts"), "utf8");
      if (!withoutOptions.has(name) && !/[a-zA-Z]+OptionsSchema\b/.test(index)) missing.push(name);
    }
    expect(missing).toEqual([]);
  });
});
