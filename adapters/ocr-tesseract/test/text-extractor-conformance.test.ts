import { characterErrorRate, describeTextExtractorConformance } from "@pixport/testing";
import { expect, it } from "vitest";
import { createTesseractTextExtractor } from "../src/index.js";

// Real OCR: the suite's documents are read by tesseract; `transcribe` (the stand-in model of LLM
// adapters) is not used. Two workers, so the concurrency test really runs recognitions in parallel.
// Both engines: tesseract.js and the system's tesseract executable.
for (const engine of ["wasm", "native"] as const)
  describeTextExtractorConformance({
    name: `tesseract (${engine})`,
    create: () => createTesseractTextExtractor({ engine, workers: 2 }),
    close: (extractor) => extractor.close(),
    capabilities: { abort: true, emptyWithoutText: true, extraInputFormats: ["png", "webp"] },
    extraTests: (context) => {
      it("rejects when aborted after the call started, then reads the next call with a fresh worker", async () => {
        const document = context.documents.find((candidate) => candidate.name === "report")!;
        const image = {
          data: document.data,
          mimeType: "image/jpeg" as const,
          width: document.width,
          height: document.height,
        };
        const controller = new AbortController();
        const pending = context.extractor.extract(
          { model: context.model, image, format: "plain" },
          { signal: controller.signal },
        );
        setTimeout(() => controller.abort(new Error("client went away")), 50);
        await expect(pending).rejects.toThrow("client went away");
        const content = await context.extractor.extract({ model: context.model, image, format: "plain" });
        expect(characterErrorRate(content, document.plain)).toBeLessThanOrEqual(0.02);
      });
    },
  });
